"""Word tasks' raw inputs: sentences from word lists or raw strings, with their tag lists.

`EncoderTaskModel.fit`, `evaluate` and `predict` take, for tagging and span
NER, one word list or one raw string per sentence. A string is split into
words by `split_text` (BERT's split, `tasks.text.word_splitting`, as
`tools/predict.py` splits plain text), and keeps the string as the
sentence's `text`, so that entities get character offsets into it
(`tasks.text.prediction_io.entity_record`).
"""

from nlpzoo.tasks.text.raw_inputs import check_targets, label_name
from nlpzoo.tasks.text.word_splitting import split_words


def split_text(text):
    """The words of a raw string as BERT's basic tokenizer splits them
    (`tasks.text.word_splitting.split_words`, which `tasks.text.prediction_io`
    also uses for the same words' character offsets).

    >>> split_text("He flew to Paris, France.")
    ('He', 'flew', 'to', 'Paris', ',', 'France', '.')
    """
    return tuple(word for word, _, _ in split_words(text))


def raw_sentences(inputs, targets, labels, make_sentence):
    """One sentence per input: `make_sentence(words, tags, text)` for each.

    Args:
        inputs: word lists (tuples of strings) or raw strings (split by
            `split_text`; `text` is then the string, else "").
        targets: None (prediction: every tag "O"), or one tag list per input,
            of tag names or ids into `labels`, as long as its words.
        labels: the model's labels, for tag ids.
        make_sentence: builds the task's sentence.

    Examples:
    >>> raw_sentences(["Paris is", ("Rome",)], [["B-LOC", "O"], [1]], ["O", "B-LOC"],
    ...               lambda words, tags, text: (words, tags, text))
    [(('Paris', 'is'), ('B-LOC', 'O'), 'Paris is'), (('Rome',), ('B-LOC',), '')]
    """
    check_targets(inputs, targets)
    sentences = []
    for index, item in enumerate(inputs):
        if isinstance(item, str):
            words, text = split_text(item), item
        else:
            words, text = tuple(str(word) for word in item), ""
        if targets is None:
            tags = ("O",) * len(words)
        else:
            row = targets[index]
            if isinstance(row, str):
                raise ValueError(f"y[{index}]: a word task's label is one tag per word, "
                                 f"not the string {row!r}")
            tags = tuple(label_name(tag, labels, f"y[{index}]") for tag in row)
            if len(tags) != len(words):
                raise ValueError(f"y[{index}]: {len(tags)} tags for {len(words)} words "
                                 f"{list(words)[:8]}")
        sentences.append(make_sentence(words, tags, text))
    return sentences
