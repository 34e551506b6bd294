"""The serving outputs of a tagger, from raw sentences (see `tasks.modeling.serving`).

Each text is split into words as `tools/predict.py` splits plain-text input,
as BERT splits raw text (`tasks.text.word_splitting`: control and format
characters removed, words split at whitespace, punctuation and CJK ideographs
words of their own, each with its character offsets). A text longer than the model's window is read
in overlapping windows (`tasks.words.serving_windows`, the model's `stride`), so
every word gets a tag. Outputs, padded to the longest row: `words` (string
[B, W], "" as padding), `num_words` (int32 [B]), `word_start_char`,
`word_end_char` (int32 [B, W], -1), `tags` (string [B, W], ""),
`entity_label` (string [B, E], ""), `entity_start`, `entity_end` (int32
[B, E], word offsets with an inclusive end as in `tools/predict.py`'s JSONL,
-1 as padding), `entity_start_char`, `entity_end_char` (int32 [B, E],
character offsets into the text as given, end exclusive: `text[start:end]`
is the entity as written; -1 as padding) and `num_entities` (int32 [B]). Entities are sorted by
start, then end. A CRF decodes with Viterbi in the graph; entities are read
from the tags as `tasks.tagging.tags_to_spans` (conlleval) reads them.

A model trained with document context (`context_sentences` > 0) also takes
`left_context` and `right_context`: [B] raw strings, the words of the
sentences before and after each sentence in its document ("" for none),
packed around it as the training pipeline does (`tasks.words.document_context`).
"""

import tensorflow as tf
from keras import ops

from nlpzoo.tasks.modeling.serving import entity_outputs, word_outputs
from nlpzoo.tasks.words.serving_windows import merge_window_words, windowed_word_inputs
from nlpzoo.tasks.words.tags import tag_parts


def tags_to_entities(prefixes, types, type_names):
    """Entities of tag sequences, vectorised, as `tasks.tagging.tags_to_spans` reads tags.

    A non-`O` tag starts an entity unless it is `I-x`/`E-x` right after
    `B-x`/`I-x` of the same type, which extends it.

    Args:
        prefixes: int32 [B, W] tag prefixes, indices of `tasks.words.tags.PREFIXES`
            (0 `O`, 1 `B`, 2 `I`, 3 `E`, 4 `S`).
        types: int32 [B, W] entity type ids (anything at `O`).
        type_names: the entity type names, by type id.

    Returns:
        `(row_ids, starts, ends, labels)`: one value per entity, row by row,
        by start; `end` inclusive.

    Examples:
    >>> prefixes = tf.constant([[1, 2, 0, 2, 1, 2]])  # B-PER I-PER O I-LOC B-LOC I-ORG
    >>> types = tf.constant([[0, 0, 0, 1, 1, 2]])
    >>> rows, starts, ends, labels = tags_to_entities(prefixes, types, ["PER", "LOC", "ORG"])
    >>> starts.numpy().tolist(), ends.numpy().tolist(), labels.numpy().tolist()
    ([0, 3, 4, 5], [1, 3, 4, 5], [b'PER', b'LOC', b'LOC', b'ORG'])
    """
    batch, width = tf.shape(prefixes)[0], tf.shape(prefixes)[1]
    previous_prefix = tf.pad(prefixes[:, :-1], [[0, 0], [1, 0]])  # O before the first word
    previous_type = tf.pad(types[:, :-1], [[0, 0], [1, 0]], constant_values=-1)
    continues = ((previous_prefix == 1) | (previous_prefix == 2)) & (
        (prefixes == 2) | (prefixes == 3)) & (previous_type == types)
    begins = (prefixes != 0) & ~continues
    member = begins | continues
    # Entity k (row-major over all rows) owns its start and the positions that continue it;
    # continuing positions follow their start in the same row, so a running count works.
    entity_of = tf.reshape(tf.cumsum(tf.cast(begins, tf.int32), axis=1), [-1])
    row_offsets = tf.cumsum(tf.reduce_sum(tf.cast(begins, tf.int32), axis=1), exclusive=True)
    entity_of = entity_of + tf.gather(row_offsets, tf.range(batch * width) // width) - 1
    positions = tf.tile(tf.range(width, dtype=tf.int32), [batch])
    flat_member = tf.reshape(member, [-1])
    total = tf.reduce_sum(tf.cast(begins, tf.int32))
    ends = tf.math.unsorted_segment_max(tf.boolean_mask(positions, flat_member),
                                        tf.boolean_mask(entity_of, flat_member), total)
    where = tf.cast(tf.where(begins), tf.int32)  # [entities, 2], row-major
    type_ids = tf.gather_nd(types, where)
    labels = tf.gather(tf.constant(list(type_names) or [""]), type_ids)
    return where[:, 0], where[:, 1], ends, labels


def tagging_outputs(model, preprocessor, labels, text, left_context=None, right_context=None,
                    stride=0):
    """Words, tags and entities of a `SequenceTagger`, from raw sentences (and their
    document context, raw strings too), in windows overlapping by `stride` subwords."""
    windows = windowed_word_inputs(preprocessor, text, left_context, right_context, stride)
    tag_ids, decoded = merge_window_words(
        windows, ops.cast(model.decode(windows.features), "int32"))  # [B, W]
    num_words = tf.cast(windows.words.row_lengths(), tf.int32)
    position = tf.range(tf.shape(tag_ids)[1])[None, :]

    parts = tag_parts(labels)
    prefixes, types, type_names = parts.prefix_ids, parts.type_ids, parts.type_names
    prefix = tf.where(decoded, tf.gather(tf.constant(prefixes, tf.int32), tag_ids), 0)
    entity_type = tf.where(decoded, tf.gather(tf.constant(types, tf.int32), tag_ids), -1)
    tags = tf.where(decoded, tf.gather(tf.constant(labels), tag_ids), "O")
    tags = tf.where(position < num_words[:, None], tags, "")

    row_ids, starts, ends, entity_labels = tags_to_entities(prefix, entity_type, type_names)
    return {**word_outputs(windows), "tags": tags,
            **entity_outputs(windows, row_ids, starts, ends, entity_labels)}
