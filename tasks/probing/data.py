"""Reading a word-level column to probe for, and turning its labels into ids.

Columns are counted from 1 with the word as column 1, as CoNLL-2003 is
usually described: `word POS chunk NER` are columns 1 to 4, so
`column=2` probes part-of-speech, `3` chunks and `4` named entities. Any
column of another column file works the same way; its labels are taken as
they are (no tag scheme is checked).
"""

import numpy as np

from nlpzoo.tasks.words.conll import read_column_file

WORD_COLUMN = 1
# What the columns of CoNLL-2003 hold, by their 1-based number.
CONLL2003_COLUMNS = {1: "word", 2: "pos", 3: "chunk", 4: "ner"}


def read_probing_column(path, column, max_sentences=None, max_words=None):
    """The sentences of a column file, tagged with the labels of `column`.

    Args:
        path: a column file (CoNLL-2003, `word tag`, ...), UTF-8.
        column: the 1-based column to probe for (the words are column 1).
        max_sentences: keep at most this many sentences, from the start of the file.
        max_words: keep whole sentences from the start while their words fit in this many.

    Returns:
        A list of `tasks.words.conll.TaggedSentence`, their `tags` taken from `column`.

    Raises:
        ValueError: `column` is not an integer >= 2.
        DataFormatError: `column` is beyond the file's columns, or the file is
            malformed (the message names the file and line).
        FileNotFoundError: no such file.

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.conll")
    >>> with open(path, "w") as file:
    ...     _ = file.write("EU NNP B-NP B-ORG\\nrejects VBZ B-VP O\\n\\nPeter NNP B-NP B-PER\\n")
    >>> [sentence.tags for sentence in read_probing_column(path, column=2)]
    [('NNP', 'VBZ'), ('NNP',)]
    >>> [sentence.tags for sentence in read_probing_column(path, column=4, max_words=2)]
    [('B-ORG', 'O')]
    """
    if isinstance(column, bool) or not isinstance(column, (int, np.integer)) or column < 2:
        raise ValueError(f"column must be an integer >= 2 (counting from 1, the words are "
                         f"column {WORD_COLUMN}), got {column!r}")
    sentences = read_column_file(path, tag_column=int(column) - 1, any_tags=True)
    return take_sentences(sentences, max_sentences, max_words)


def take_sentences(sentences, max_sentences=None, max_words=None):
    """The first sentences, at most `max_sentences` of them and `max_words` words in all.

    Sentences are kept whole: the first one that would pass `max_words`
    ends the selection (so a first sentence longer than `max_words` gives
    none). None means no bound.

    Examples:
    >>> take_sentences([["a", "b"], ["c"], ["d", "e"]], max_words=3)
    [['a', 'b'], ['c']]
    >>> take_sentences([["a", "b"], ["c"], ["d", "e"]], max_sentences=1)
    [['a', 'b']]
    """
    kept, words = [], 0
    for sentence in sentences[:max_sentences]:
        if max_words is not None and words + len(sentence) > max_words:
            break
        kept.append(sentence)
        words += len(sentence)
    return kept


def probing_labels(sentences):
    """The label set of training sentences, sorted: label id = index.

    Examples:
    >>> from nlpzoo.tasks.words.conll import TaggedSentence
    >>> probing_labels([TaggedSentence(("EU", "rejects"), ("NNP", "VBZ")),
    ...                 TaggedSentence(("it",), ("PRP",))])
    ['NNP', 'PRP', 'VBZ']
    """
    return sorted({tag for sentence in sentences for tag in sentence.tags})


def label_ids(sentences, labels):
    """One int32 array of label ids per sentence.

    A label not in `labels` (seen in evaluation data only) gets the id
    `len(labels)`, which no probe predicts: such words count as errors.

    Examples:
    >>> from nlpzoo.tasks.words.conll import TaggedSentence
    >>> [ids.tolist() for ids in label_ids([TaggedSentence(("a", "b"), ("NN", "XX"))],
    ...                                    ["DT", "NN"])]
    [[1, 2]]
    """
    index = {label: i for i, label in enumerate(labels)}
    unseen = len(labels)
    return [np.array([index.get(tag, unseen) for tag in sentence.tags], np.int32)
            for sentence in sentences]
