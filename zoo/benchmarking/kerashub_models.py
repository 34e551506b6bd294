"""KerasHub models and inputs that `tools/benchmark.py` trains beside ours.

`kerashub_tagger` (a `BertBackbone` with a Dense over every subword) and
`kerashub_classifier` (pooled output → dropout → Dense) are what KerasHub's
backbone plus the plainest head gives; `encode_words` and `encode_texts` feed
them the subwords of *our* preprocessor, so that both models see the same
tokens (KerasHub's own `BertTokenizer` turns accented words into `[UNK]` on an
uncased vocabulary, see the design notes).
"""


def kerashub_tagger(backbone, num_classes, dropout):
    """KerasHub's `backbone` + dropout + a float32 Dense per subword (logits).

    `traces` counts the Python runs of `call`, i.e. how often a compiled step
    was traced.
    """
    import keras

    class KerasHubTagger(keras.Model):
        def __init__(self):
            super().__init__(name="kerashub_tagger")
            self.backbone = backbone
            self.dropout = keras.layers.Dropout(dropout)
            self.logits = keras.layers.Dense(num_classes, dtype="float32", name="logits")
            self.traces = 0

        def call(self, inputs, training=False):
            self.traces += 1
            sequence = self.backbone(inputs, training=training)["sequence_output"]
            return self.logits(self.dropout(sequence, training=training))

    return KerasHubTagger()


def kerashub_classifier(backbone, num_classes, dropout):
    """KerasHub's `backbone`, its pooled output → dropout → a float32 Dense (logits):
    the head of `keras_hub.models.BertTextClassifier`, fed our subwords."""
    import keras

    pooled = backbone(backbone.input)["pooled_output"]
    dropped = keras.layers.Dropout(dropout)(pooled)
    logits = keras.layers.Dense(num_classes, dtype="float32", name="logits")(dropped)
    return keras.Model(backbone.input, logits, name="kerashub_classifier")


def encode_words(preprocessor, sentences):
    """(token ids, first-subword positions) per sentence (`.words`), by our word-level
    `preprocessor`: lists of ints, `[CLS] … [SEP]`, cut to its `max_seq_length`."""
    from nlpzoo.tasks.words.pipeline import ragged_words

    features, _ = preprocessor.encode_words(ragged_words([s.words for s in sentences]))
    return features["token_ids"].to_list(), features["word_starts"].to_list()


def encode_texts(preprocessor, texts):
    """Token ids per text (`[CLS] … [SEP]`, cut to `max_seq_length`) by our text
    `preprocessor`: lists of ints."""
    import tensorflow as tf

    return preprocessor.encode(tf.constant(list(texts)))["token_ids"].to_list()
