"""Probing classifiers: what each layer of a frozen encoder knows about a word-level column.

A linear softmax probe is trained on every layer's vector of each word (its
first subword; layer 0 = the embeddings) to predict a column of a CoNLL file
(part-of-speech, chunk, entity tag, ...), and its accuracy on held-out words
is reported per layer. `tools/probe.py` runs it for a pretrained checkpoint
and a randomly initialised control of the same shape.

Not a `Task` (`tasks/task.py`): nothing here is fine-tuned with `fit` on a
`tf.data` pipeline, saved as a model, served or exported; the encoder is
frozen and only read. So it is a library of three steps that a binary or a
notebook chains:

>>> import os, tempfile
>>> from nlpzoo.layers import Encoder
>>> from nlpzoo.tasks.words.pipeline import make_word_dataset
>>> from nlpzoo.tasks.words.preprocessor import WordPreprocessor
>>> path = os.path.join(tempfile.mkdtemp(), "tiny.conll")
>>> with open(path, "w") as file:
...     _ = file.write("the DT\\ncat NN\\n\\na DT\\ndog NN\\n")
>>> sentences = read_probing_column(path, column=2)             # 1. the column
>>> labels = probing_labels(sentences)
>>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "a", "cat", "dog"]
>>> encoder = Encoder(vocabulary_size=len(vocabulary), num_layers=2, num_heads=2,
...                   hidden_dim=8, intermediate_dim=16, max_sequence_length=16)
>>> dataset = make_word_dataset([s.words for s in sentences], label_ids(sentences, labels),
...                             WordPreprocessor(vocabulary, max_seq_length=16))
>>> features = extract_word_features(encoder, dataset)         # 2. one forward pass
>>> probes = train_probes(features.vectors, features.labels, len(labels), epochs=2)
>>> len(probe_accuracies(probes, features.vectors, features.labels))  # 3. per layer
3
"""

from nlpzoo.tasks.probing.classifier import (
    build_probes,
    majority_accuracy,
    probe_accuracies,
    train_probes,
)
from nlpzoo.tasks.probing.data import (
    CONLL2003_COLUMNS,
    WORD_COLUMN,
    label_ids,
    probing_labels,
    read_probing_column,
    take_sentences,
)
from nlpzoo.tasks.probing.features import (
    WordFeatures,
    extract_word_features,
    random_encoder_like,
    word_vector_model,
)
from nlpzoo.tasks.probing.plot import accuracy_plot, save_png

__all__ = [
    "CONLL2003_COLUMNS",
    "WORD_COLUMN",
    "WordFeatures",
    "accuracy_plot",
    "build_probes",
    "extract_word_features",
    "label_ids",
    "majority_accuracy",
    "probe_accuracies",
    "probing_labels",
    "random_encoder_like",
    "read_probing_column",
    "save_png",
    "take_sentences",
    "train_probes",
    "word_vector_model",
]
