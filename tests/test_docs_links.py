"""The README is a front page and every documentation link leads somewhere.

README.md stays under 15 KB with no dated measurement (those live in docs/results.md, and
their history in git); every relative Markdown link in README.md and docs/*.md names a file
that exists, and an anchor into one of our Markdown pages names one of its headings; every
file of the repository that the pages name in code (`tests/zoo/test_hf_import.py`) exists.
"""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
README_LIMIT_BYTES = 15 * 1024


# [text](target) and ![alt](target); the target ends at whitespace or the closing bracket.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~)")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
# A repository path in inline code or a code block: `tasks/words/shapes.py`, `configs/`.
REPOSITORY_PATH = re.compile(
    r"(?<![\w/.$<-])((?:tests|tools|tasks|zoo|layers|nlpzoo|benchmarks|configs|samples|docs)"
    r"/[\w./-]*)")


def markdown_files():
    docs = os.path.join(ROOT, "docs")
    return [README] + sorted(os.path.join(docs, name) for name in os.listdir(docs)
                             if name.endswith(".md"))


def prose_lines(path):
    """(line number, line) outside fenced code blocks."""
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line.lstrip()):
                in_fence = not in_fence
                continue
            if not in_fence:
                yield number, line


def links(path):
    """(line number, target) of every link in `path` outside code blocks.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
    ...     _ = f.write("See [a](docs/a.md#x) and ![b](img.png).\\n```\\n[c](no.md)\\n```\\n")
    >>> links(f.name)
    [(1, 'docs/a.md#x'), (1, 'img.png')]
    """
    return [(number, match.group(1)) for number, line in prose_lines(path)
            for match in LINK.finditer(line)]


def github_anchor(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens.

    >>> github_anchor("Span NER NONE weight")
    'span-ner-none-weight'
    >>> github_anchor("`--vocab_size` is the size you get")
    '--vocab_size-is-the-size-you-get'
    >>> github_anchor("Cross-encoder or bi-encoder for pairs?")
    'cross-encoder-or-bi-encoder-for-pairs'
    """
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    return {github_anchor(line.lstrip("#")) for _, line in prose_lines(path)
            if re.match(r"#{1,6} ", line)}


def is_relative(target):
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE)


def test_every_relative_link_resolves():
    broken = []
    for path in markdown_files():
        for number, target in links(path):
            if not is_relative(target):
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                        if file_part else path)
            where = f"{os.path.relpath(path, ROOT)}:{number}: {target}"
            if not os.path.exists(resolved):
                broken.append(f"{where} (no such file)")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                broken.append(f"{where} (no heading with that anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def repository_paths(path):
    """(line number, path) of every file or folder of the repository that `path` names.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
    ...     _ = f.write("Run `tools/train.py` (see tasks/words/shapes.py.) or runs/x.\\n")
    >>> repository_paths(f.name)
    [(1, 'tools/train.py'), (1, 'tasks/words/shapes.py')]
    """
    with open(path, encoding="utf-8") as f:
        return [(number, match.group(1).rstrip("."))
                for number, line in enumerate(f, 1)
                for match in REPOSITORY_PATH.finditer(line)]


def test_every_repository_path_named_in_the_docs_exists():
    missing = [f"{os.path.relpath(path, ROOT)}:{number}: {named}"
               for path in markdown_files() for number, named in repository_paths(path)
               if not os.path.exists(os.path.join(ROOT, named))]
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)


def test_readme_is_a_front_page():
    size = os.path.getsize(README)
    assert size <= README_LIMIT_BYTES, f"README.md is {size} bytes; at most {README_LIMIT_BYTES}"
    with open(README, encoding="utf-8") as f:
        dated = [f"README.md:{n}: {line.strip()}" for n, line in enumerate(f, 1)
                 if DATE.search(line)]
    assert not dated, "dated measurements belong in docs/results.md:\n" + "\n".join(dated)


def test_every_docs_page_is_linked_from_the_readme():
    linked = {os.path.normpath(os.path.join(ROOT, target.partition("#")[0]))
              for _, target in links(README) if is_relative(target)}
    pages = [path for path in markdown_files()[1:] if path not in linked]
    assert not pages, "docs pages the README does not link to: " + ", ".join(
        os.path.relpath(path, ROOT) for path in pages)
