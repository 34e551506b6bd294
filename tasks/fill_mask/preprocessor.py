"""Raw text with mask tokens → encoder features plus where the masks are.

The mask token is the tokenizer's ("[MASK]" for WordPiece and ALBERT,
"<mask>" for RoBERTa and XLM-R). The tokenizer cuts it out of the raw text
whole, as Hugging Face's tokenizers treat their special tokens (BERT's basic
tokenizer would split it into "[", "mask", "]"; RoBERTa's `<mask>` takes the
whitespace before it); the text between masks is tokenized as usual. Whether
a mask starts a word is read from the text before it
(`SubwordTokenizer.word_start_context`). The same `encode` runs in Python
prediction and inside the exported SavedModel.
"""

import keras
import tensorflow as tf

from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.text.ragged_rows import row_prefix
from nlpzoo.tasks.text.tokenizer import MASK

# The features the encoder and its MLM head read; the others serve decoding.
MODEL_INPUTS = ("token_ids", "segment_ids", "padding_mask", "mask_positions")


@keras.saving.register_keras_serializable(package="nlpzoo")
class FillMaskPreprocessor(TextPreprocessor):
    """A `TextPreprocessor` that also says where the mask tokens of each text are.

    `encode` gives, besides the ragged `token_ids`, `segment_ids` and
    `padding_mask` of `[CLS] text [SEP]`:

    - `mask_positions` int32 [B, (M)]: the positions of the masks that fit in
      `max_seq_length`, in text order;
    - `mask_starts_word` bool [B, (M)]: whether each starts a word (see
      `vocabulary_filter`);
    - `num_masks` int32 [B]: the masks in the text, counted before truncation;
    - `num_masks_kept` int32 [B]: M, those that fit (fewer than `num_masks`:
      some fell past `max_seq_length`).

    `pad` (and `call`) pads the tokens to the batch's bucket length and the
    mask features to the most masks of a row (at least 1; position 0 and
    `mask_starts_word` False in the unused slots).

    Examples:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "paris", "is", "##s", "."]
    >>> preprocessor = FillMaskPreprocessor(vocabulary, max_seq_length=16)
    >>> features = preprocessor(tf.constant(["Paris is [MASK] .", "[MASK]is[MASK]"]))
    >>> features["token_ids"].numpy()[0, :7].tolist()
    [2, 5, 6, 4, 8, 3, 0]
    >>> features["mask_positions"].numpy().tolist(), features["mask_starts_word"].numpy().tolist()
    ([[3, 0], [1, 3]], [[True, False], [True, False]])
    >>> features["num_masks"].numpy().tolist()
    [1, 2]
    """

    def __init__(self, vocabulary=None, lowercase=True, max_seq_length=128, **kwargs):
        super().__init__(vocabulary, lowercase=lowercase, max_seq_length=max_seq_length,
                         **kwargs)

    def set_vocabulary(self, vocabulary):
        super().set_vocabulary(vocabulary)
        if MASK not in self.vocabulary:
            raise ValueError(f"the vocabulary has no {MASK} token: a fill-mask model needs one")

    def set_tokenizer(self, tokenizer):
        super().set_tokenizer(tokenizer)
        mask = tokenizer.special_tokens["mask"]
        if mask not in self.vocabulary:
            raise ValueError(f"the vocabulary has no {mask} token: a fill-mask model needs one")

    @property
    def mask_token(self):
        """The tokenizer's mask token: "[MASK]", "<mask>", ..."""
        if self._tokenizer is None and self._tokenizer_config is None:
            return MASK
        return self.tokenizer().special_tokens["mask"]

    def encode(self, text, text_pair=None):
        if text_pair is not None:
            raise ValueError("fill-mask reads one text per example, not text pairs")
        tokenizer = self.tokenizer()
        text = tf.convert_to_tensor(text, tf.string)
        parts = tf.strings.split(text, sep=self.mask_token)  # [B, (masks + 1)] strings
        flat_parts = parts.flat_values
        # Every part but the last of its text is followed by a mask.
        position = tf.ragged.range(parts.row_lengths()).flat_values
        last = tf.gather(parts.row_lengths() - 1, parts.value_rowids())
        before_mask = tf.not_equal(position, last)
        # The tokenizer cuts the mask tokens out itself (with the whitespace an lstrip takes).
        segment = tokenizer.tokenize_flat(text)
        token_ids, segment_ids = tokenizer.pack([segment], self.max_seq_length)

        is_mask = tf.equal(token_ids, tokenizer.mask_id)
        mask_positions = tf.ragged.boolean_mask(
            tf.ragged.range(tf.cast(token_ids.row_lengths(), tf.int32)), is_mask)
        starts_word = tf.ragged.boolean_mask(
            parts.with_flat_values(tf.strings.regex_full_match(
                flat_parts, tokenizer.word_start_context)),
            parts.with_flat_values(before_mask))
        kept = tf.cast(mask_positions.row_lengths(), tf.int32)
        return {"token_ids": token_ids, "segment_ids": segment_ids,
                "padding_mask": tf.ones_like(token_ids),
                "mask_positions": mask_positions,
                "mask_starts_word": row_prefix(starts_word, kept),
                "num_masks": tf.cast(parts.row_lengths() - 1, tf.int32),
                "num_masks_kept": kept}

    def pad(self, features):
        tokens = {name: features[name] for name in ("token_ids", "segment_ids", "padding_mask")}
        padded = super().pad(tokens)
        masks = tf.maximum(tf.reduce_max(tf.concat(
            [tf.cast(features["mask_positions"].row_lengths(), tf.int32), [1]], 0)), 1)
        for name in ("mask_positions", "mask_starts_word"):
            dense = features[name].to_tensor()  # as wide as the most masks (maybe 0)
            padded[name] = tf.pad(dense, [[0, 0], [0, masks - tf.shape(dense)[1]]])
        for name in ("num_masks", "num_masks_kept"):
            padded[name] = features[name]
        return padded


def model_inputs(features):
    """The features the model reads (`MODEL_INPUTS`) of `FillMaskPreprocessor` features."""
    return {name: features[name] for name in MODEL_INPUTS}
