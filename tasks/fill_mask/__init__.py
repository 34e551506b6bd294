"""Fill-mask: the words a pretrained encoder and its masked-LM head put in place of [MASK]."""
