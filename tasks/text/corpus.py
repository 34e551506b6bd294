"""Reading an unlabeled corpus into documents of lines.

Two layouts are understood:

- `"blank_lines"`: one sentence or paragraph per line, documents separated by
  one or more blank lines (BERT's `create_pretraining_data.py` layout).
- `"wikitext"`: WikiText-style text, where a level-1 heading `= Title =` at
  the start of a line begins a new document. Deeper headings (`= = Section
  = =`) are dropped, the text after a heading on the same line is kept, and
  WikiText's escapes are undone: `&lt;` / `&gt;` / `&quot;` / `&amp;`,
  `@-@`, `@,@`, `@.@` (with or without spaces around the symbol) and the
  `<unk>` placeholders (removed: predicting a placeholder teaches nothing).

`"auto"` picks `"wikitext"` when the first non-blank line starts with a
level-1 heading, else `"blank_lines"`.

The file is streamed (`tasks.text.line_reader.read_lines`: `\\n`, `\\r\\n` and `\\r`
line endings, a byte-order mark dropped, invalid UTF-8 an error naming the file,
line and byte); `iter_documents` yields one document at a time. Lines are
cleaned as BERT does (`tasks.text.text_cleaning.clean_text`), so a line of only
control characters is blank.
"""

import html
import itertools
import re

from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.line_reader import cleaned, read_lines

CORPUS_FORMATS = ("auto", "blank_lines", "wikitext")

_AT_SYMBOL = re.compile(r"\s?@\s?([-.,])\s?@\s?")
_UNK = re.compile(r"\s*<\s*unk\s*>")


def _clean_wikitext(line):
    line = html.unescape(line)
    line = _AT_SYMBOL.sub(r"\1", line)
    line = _UNK.sub("", line)
    return " ".join(line.split())


def _equals_run(tokens, position):
    run = 0
    while position + run < len(tokens) and tokens[position + run] == "=":
        run += 1
    return run


_MAX_TITLE_TOKENS = 24


def _heading_at(tokens, position, level):
    """End (exclusive) of the title of a level-`level` heading opening at `position`, or None."""
    end = position + level
    while end < len(tokens) and tokens[end] != "=" and end - position - level < _MAX_TITLE_TOKENS:
        end += 1
    if end == position + level or end >= len(tokens) or tokens[end] != "=":
        return None
    return end


def wikitext_fragments(line):
    """Splits a WikiText line into text and headings: a list of `(level, text)`.

    Level 0 is text; level n > 0 a heading whose title is dropped. A heading
    opens with n `=` tokens and closes with n more after its title (24
    tokens at most); a longer closing run opens the next heading (`= = A = =
    = = B = = =` is a level-2 then a level-3 heading). Headings may sit in
    the middle of a line in some WikiText copies.

    Examples:
    >>> wikitext_fragments(" = Homarus gammarus = Homarus gammarus is a lobster .")
    [(1, ''), (0, 'Homarus gammarus is a lobster .')]
    >>> wikitext_fragments("It ends . = = History = = = = = Name = = = The M @-@ 82")
    [(0, 'It ends .'), (2, ''), (3, ''), (0, 'The M @-@ 82')]
    >>> wikitext_fragments("x = y")
    [(0, 'x = y')]
    """
    tokens = line.split()
    fragments, text, position = [], [], 0
    while position < len(tokens):
        run = _equals_run(tokens, position)
        end = _heading_at(tokens, position, run) if run else None
        if end is None:
            text.extend(tokens[position:position + max(run, 1)])
            position += max(run, 1)
            continue
        if text:
            fragments.append((0, " ".join(text)))
            text = []
        fragments.append((run, ""))
        # Close with `run` tokens; any '=' left in the run opens the next heading.
        position = end + min(_equals_run(tokens, end), run)
    if text:
        fragments.append((0, " ".join(text)))
    return fragments


def detect_corpus_format(lines):
    """"wikitext" when the first non-blank line is a `= Title =` heading."""
    for line in lines:
        if line.strip():
            return "wikitext" if wikitext_fragments(line)[0][0] == 1 else "blank_lines"
    return "blank_lines"


def _blank_line_documents(lines):
    current = []
    for line in lines:
        text = " ".join(line.split())
        if text:
            current.append(text)
        elif current:
            yield current
            current = []
    if current:
        yield current


def _cleaned_fragments(line):
    """`wikitext_fragments` of `line` with each text cleaned (a heading's is empty)."""
    return [(level, _clean_wikitext(fragment)) for level, fragment in wikitext_fragments(line)]


def _wikitext_documents(lines):
    current = []
    for line in lines:
        for level, text in _cleaned_fragments(line):
            if level == 1 and current:
                yield current
                current = []
            if text:
                current.append(text)
    if current:
        yield current


def wikitext_texts(path):
    """The texts of a WikiText file with their 1-based lines, read as the "wikitext"
    corpus format reads them (headings dropped, escapes and `<unk>` undone), without
    the documents: what a model pretrained on that corpus saw, one line at a time.

    Examples:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "wiki.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write(" = Lobster = \\n\\n It grows @-@ slowly <unk> .\\n = = Life = = \\n")
    >>> list(wikitext_texts(path))
    [(3, 'It grows-slowly .')]
    """
    for number, line in read_lines(path):
        for _, text in _cleaned_fragments(cleaned(line)):
            if text:
                yield number, text


def iter_documents(path, corpus_format="auto"):
    """`read_corpus`, one document at a time: the file is streamed, never held whole.

    Examples:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("One .\\r\\nTwo\\x07 .\\r\\n\\r\\nThree .")
    >>> documents = iter_documents(path)
    >>> next(documents), next(documents)
    (['One .', 'Two .'], ['Three .'])
    """
    if corpus_format not in CORPUS_FORMATS:
        raise ValueError(f"corpus_format must be one of {CORPUS_FORMATS}, got {corpus_format!r}")
    lines = (cleaned(line) for _, line in read_lines(path))
    if corpus_format == "auto":
        # The first non-blank line decides; the lines read to find it are read again.
        head = []
        for line in lines:
            head.append(line)
            if line.strip():
                break
        corpus_format = detect_corpus_format(head)
        lines = itertools.chain(head, lines)
    if corpus_format == "wikitext":
        documents = _wikitext_documents(lines)
    else:
        documents = _blank_line_documents(lines)
    found = False
    for document in documents:
        found = True
        yield document
    if not found:
        raise DataFormatError(f"{path}: the corpus holds no text")


def read_corpus(path, corpus_format="auto"):
    """Reads a text corpus: a list of documents, each a list of lines.

    Args:
        path: a UTF-8 text file.
        corpus_format: "auto", "blank_lines" or "wikitext" (module docstring).

    Raises:
        DataFormatError: the file cannot be read or does not exist, is not UTF-8
            (names the line and byte), or holds no text.

    Examples:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> with open(path, "w") as f:
    ...     _ = f.write("= Lobster = It is blue .\\n= = Life = = It grows @-@ slowly .\\n"
    ...                 "= Crab = A &lt; unk &gt; crab <unk> .\\n")
    >>> read_corpus(path)
    [['It is blue .', 'It grows-slowly .'], ['A crab .']]
    """
    return list(iter_documents(path, corpus_format))
