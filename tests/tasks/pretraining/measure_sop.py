"""Measures how fast sentence-order prediction learns: held-out SOP accuracy along a run.

Not a test (too slow for one): the figure in docs/command_line.md (Pretraining) came from

    python -m tests.tasks.pretraining.measure_sop 4000 64 128 1e-3 2 500

arguments: steps, max_seq_length, hidden_dim, peak learning rate, layers (one shared block,
ALBERT-style, embedding_dim = hidden_dim / 2), steps between evaluations. The encoder
trains with `mlm_sop` (batch 32, AdamW, warm-up 10%) on SOP pairs of WikiText-2's
validation split (a 2,000-piece WordPiece vocabulary learned from it) and is evaluated
on the first 2,048 pairs of its test split, which it never sees.
"""

import sys
import time

import keras

from nlpzoo.layers import Encoder
from nlpzoo.tasks.text.corpus import read_corpus
from nlpzoo.tasks.pretraining.corpus_datasets import masked_datasets, pack_corpus
from nlpzoo.tasks.pretraining.model import Pretrainer
from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer, build_vocabulary
from nlpzoo.tasks.training.optimization import create_optimizer
from tests.helpers.paths import shared_data_path


def main(steps=4000, length=64, hidden=128, learning_rate=1e-3, layers=2, every=500):
    keras.utils.set_random_seed(0)
    start = time.time()
    train_documents = read_corpus(shared_data_path("wikitext2", "valid.txt"))
    test_documents = read_corpus(shared_data_path("wikitext2", "test.txt"))
    tokenizer = WordPieceTokenizer(build_vocabulary(
        [line for document in train_documents for line in document], vocab_size=2000))
    train, _ = pack_corpus(train_documents, tokenizer, "mlm_sop", length, seed=0,
                           eval_fraction=0.0)
    held_out, _ = pack_corpus(test_documents, tokenizer, "mlm_sop", length, seed=1,
                              eval_fraction=0.0)
    held_out = {key: value[:2048] for key, value in held_out.items()}
    print(f"{len(train['token_ids'])} training pairs, {len(held_out['token_ids'])} held out "
          f"({held_out['sentence_order'].mean():.3f} in order)", flush=True)
    stream, evaluation = masked_datasets(train, held_out, tokenizer, objective="mlm_sop",
                                         batch_size=32, max_predictions=length * 15 // 100 + 1,
                                         seed=0)
    encoder = Encoder(vocabulary_size=tokenizer.vocabulary_size, num_layers=layers,
                      num_heads=2, hidden_dim=hidden, intermediate_dim=4 * hidden,
                      embedding_dim=hidden // 2, share_layers=True, dropout=0.0,
                      max_sequence_length=length)
    model = Pretrainer(encoder, objective="mlm_sop")
    model.compile(optimizer=create_optimizer(learning_rate, steps, steps // 10, 0.01))
    for done in range(0, steps + 1, every):
        result = model.evaluate(evaluation, return_dict=True, verbose=0)
        print(f"step {done}: sop_accuracy {result['sop_accuracy']:.3f} sop_loss "
              f"{result['sop_loss']:.3f} mlm_accuracy {result['mlm_accuracy']:.3f} "
              f"({time.time() - start:.0f} s)", flush=True)
        if done < steps:
            model.fit(stream.skip(done), steps_per_epoch=every, epochs=1, verbose=0)


if __name__ == "__main__":
    main(*(int(a) if a.isdigit() else float(a) for a in sys.argv[1:]))
