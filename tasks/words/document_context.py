"""Context beyond the sentence: neighbouring sentences of the same document as extra input.

With `context_sentences=N` (an option of the tagging and span NER tasks),
each sentence is encoded with the words of up to N sentences before it and N
after it in its document, as BERT does for CoNLL-2003 NER (Devlin et al.,
2019, §5.3: "we include the maximal document context"). The context words are
attended to but carry no label, no loss and no prediction; only the centre
sentence's words are tagged or give span candidates.

This module is the one home of what both tasks share:

- which sentences are neighbours (`document_ranges`, `add_document_context`):
  sentences next to each other in file order, from the same file and the same
  document; a `-DOCSTART-` line, or the start or end of the file, bounds a
  document (plain text given to `tools/predict.py`: one document per file);
- the `--context_sentences` flag and option (`define_context_flag`,
  `check_context_sentences`);
- the exported model's extra inputs (`serving_input_names`): raw
  `left_context` and `right_context` strings, which
  `tasks.words.serving_windows.windowed_word_inputs` packs.

The packing itself, `[CLS] left-context sentence right-context [SEP]` with
the sentence first and the context trimmed at the far ends, is
`tasks.words.preprocessor.WordPreprocessor.encode_words`: the one word
encoding, used by the `tf.data` pipeline and by the exported model alike.

Examples:
>>> from nlpzoo.tasks.words.conll import TaggedSentence
>>> doc = [TaggedSentence((word,), ("O",), "f.txt", line) for line, word in
...        enumerate(["A", "B", "C"], 1)]
>>> [(s.left_context, s.words, s.right_context) for s in add_document_context(doc, 1)]
[((), ('A',), ('B',)), (('A',), ('B',), ('C',)), (('B',), ('C',), ())]

References:
    Devlin et al., 2019. BERT: Pre-training of Deep Bidirectional Transformers
    for Language Understanding (https://arxiv.org/abs/1810.04805).
"""

import dataclasses
import numbers

from absl import flags


CONTEXT_FLAG = "context_sentences"
CONTEXT_INPUTS = ("left_context", "right_context")


def check_context_sentences(value):
    """`value` as an int >= 0, or `ValueError` (for the tasks' `Options`).

    Examples:
    >>> check_context_sentences(2)
    2
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"context_sentences must be an integer >= 0, got {value!r}")
    return int(value)


def define_context_flag(flag_values):
    """Defines `--context_sentences` in `flag_values`, once for every task that takes it.

    Several tasks share the flag (tagging, span NER); absl refuses a second
    definition, so the first task to define it does and the others reuse it.

    Examples:
    >>> values = flags.FlagValues()
    >>> define_context_flag(values); define_context_flag(values)
    >>> _ = values(["train", "--context_sentences=2"])
    >>> values.context_sentences
    2
    """
    if CONTEXT_FLAG in flag_values:
        return
    flags.DEFINE_integer(
        CONTEXT_FLAG, 0, "Tagging and span NER: encode each sentence with up to this many "
        "sentences before and after it in its document (a -DOCSTART- line or the file's "
        "start or end bounds a document) as context that is attended to but not labelled; "
        "0: the sentence alone. Kept with the model: predict and export use it too.",
        lower_bound=0, flag_values=flag_values)


def document_ranges(sentences):
    """`(start, end)` index ranges of the runs of sentences from one document.

    Sentences are in one document when they are next to each other in the
    list and share their `source` (file) and `document` index (which the
    readers set; 0 for sentences built by hand).

    Examples:
    >>> from nlpzoo.tasks.words.conll import TaggedSentence
    >>> sentences = [TaggedSentence(("a",), ("O",), "f.txt", 1, document=d) for d in (0, 0, 1)]
    >>> document_ranges(sentences + [TaggedSentence(("b",), ("O",), "g.txt", 1)])
    [(0, 2), (2, 3), (3, 4)]
    """
    ranges = []
    for index, sentence in enumerate(sentences):
        key = (sentence.source, sentence.document)
        if ranges and key == (sentences[index - 1].source, sentences[index - 1].document):
            ranges[-1] = (ranges[-1][0], index + 1)
        else:
            ranges.append((index, index + 1))
    return ranges


def add_document_context(sentences, context_sentences):
    """`sentences` with their neighbours' words as `left_context` and `right_context`.

    Each sentence gets the words of up to `context_sentences` sentences
    before it and after it in its document (`document_ranges`), in order, as
    flat word tuples; the packing into `max_seq_length` subwords happens in
    `WordPreprocessor.encode_words`. With 0 the sentences come back as given.

    Args:
        sentences: `TaggedSentence`s or `SpanSentence`s, in file order.
        context_sentences: N, the neighbours on each side (>= 0).

    Returns:
        A new list of sentences (copies with the context set).

    Examples:
    >>> from nlpzoo.tasks.words.conll import TaggedSentence
    >>> doc = [TaggedSentence(words, ("O",) * len(words), "f.txt", 1)
    ...        for words in (("a", "b"), ("c",), ("d",))]
    >>> add_document_context(doc, 2)[0].right_context
    ('c', 'd')
    """
    count = check_context_sentences(context_sentences)
    sentences = list(sentences)
    if count == 0:
        return sentences
    with_context = []
    for start, end in document_ranges(sentences):
        for index in range(start, end):
            before = sentences[max(start, index - count):index]
            after = sentences[index + 1:min(end, index + 1 + count)]
            with_context.append(dataclasses.replace(
                sentences[index],
                left_context=tuple(word for sentence in before for word in sentence.words),
                right_context=tuple(word for sentence in after for word in sentence.words)))
    return with_context


def context_lists(sentences):
    """`(left_context, right_context)` word lists of `sentences` for `make_word_dataset`;
    `(None, None)` when no sentence has context (the encoding of a sentence alone).

    Examples:
    >>> from nlpzoo.tasks.words.conll import TaggedSentence
    >>> context_lists([TaggedSentence(("a",), ("O",))])
    (None, None)
    """
    if not any(s.left_context or s.right_context for s in sentences):
        return None, None
    return [s.left_context for s in sentences], [s.right_context for s in sentences]


def serving_input_names(context_sentences):
    """The string inputs of a word task's exported signature.

    Examples:
    >>> serving_input_names(0), serving_input_names(1)
    (('text',), ('text', 'left_context', 'right_context'))
    """
    return ("text",) + (CONTEXT_INPUTS if context_sentences else ())
