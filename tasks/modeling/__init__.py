"""What every task model shares: the encoder-plus-head base model, auxiliary MLM, losses, ensembles, serving."""
