r"""Learns a WordPiece vocabulary from raw text.

    python tools/build_vocab.py --corpus=wiki.train.txt --vocab_size=8000 \
        --output=runs/vocab.txt

The corpus is read as `tools/pretrain.py` reads it (blank-line or
WikiText-style documents; comma-separate several files), streamed. The
reserved tokens `[PAD] [UNK] [CLS] [SEP] [MASK]` get ids 0-4 (more with
--reserved_tokens). The file holds exactly --vocab_size tokens, reserved
ones included (`tasks.text.tokenizer.build_vocabulary`: every character is kept,
the rarest pieces dropped or `[unusedN]` placeholders added). Progress
(lines and words counted, then each learning pass) goes to standard error
(`--noprogress`: none).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from nlpzoo.tasks.io.errors import DataFormatError  # noqa: E402
from nlpzoo.tasks.io.ownership import NotOurDirectory, check_output_file  # noqa: E402
from nlpzoo.tasks.text.line_reader import read_lines  # noqa: E402
from nlpzoo.tasks.text.corpus import CORPUS_FORMATS, iter_documents  # noqa: E402
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS, build_vocabulary, write_vocabulary  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402
from nlpzoo.tools.cli.flags import define_progress_flag, enable_progress  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_list("corpus", None, "Text file(s), comma-separated.")
flags.DEFINE_enum("corpus_format", "auto", CORPUS_FORMATS, "How documents are separated: "
                  "blank lines, or WikiText '= Title =' headings; auto detects.")
flags.DEFINE_integer("vocab_size", 8000, "Vocabulary size, reserved tokens included: "
                     "exact (the rarest pieces are dropped, or [unusedN] placeholders fill "
                     "up a small corpus's); at least the reserved tokens plus every "
                     "character twice (alone and after ##).", lower_bound=10)
flags.DEFINE_boolean("lowercase", True, "Lower-case and strip accents (uncased vocabulary).")
flags.DEFINE_integer("min_frequency", 2, "Words seen fewer times are not learned whole.",
                     lower_bound=1)
flags.DEFINE_list("reserved_tokens", [], "Extra reserved tokens after [PAD] [UNK] [CLS] "
                  "[SEP] [MASK].")
flags.DEFINE_string("output", None, "Where to write vocab.txt.")
flags.DEFINE_boolean("overwrite", False, "Replace an existing --output file.")
define_progress_flag()
flags.mark_flags_as_required(["corpus", "output"])


def _lines(paths):
    for path in paths:
        for document in iter_documents(path, FLAGS.corpus_format):
            yield from document


def _is_vocabulary(path):
    """A WordPiece vocabulary: UTF-8 text, one token a line, no spaces inside a token."""
    try:  # read_lines: a long line (no vocabulary's) is not held whole
        return all(line.strip() and len(line.split()) == 1 for _, line in read_lines(path))
    except (OSError, DataFormatError):
        return False


def main(argv):
    try:  # an existing file is replaced only when it is a vocabulary
        check_output_file(FLAGS.output, "--output", FLAGS.overwrite, looks_ours=_is_vocabulary)
    except NotOurDirectory as error:
        raise UserError(str(error))
    directory = os.path.dirname(os.path.abspath(FLAGS.output))
    if not os.path.isdir(directory):
        raise UserError(f"--output: no such directory {directory}")
    enable_progress()
    start = time.time()
    reserved = list(RESERVED_TOKENS)
    for token in FLAGS.reserved_tokens:
        if token in reserved:
            raise UserError(f"--reserved_tokens: {token!r} is listed twice or is a default one")
        reserved.append(token)
    try:
        tokens = build_vocabulary(_lines(FLAGS.corpus), FLAGS.vocab_size, FLAGS.lowercase,
                                  FLAGS.min_frequency,
                                  reserved_tokens=reserved)
    except ValueError as error:
        raise UserError(f"--vocab_size={FLAGS.vocab_size}: {error}")
    write_vocabulary(tokens, FLAGS.output)
    print(f"wrote {len(tokens):,} tokens to {FLAGS.output} in {time.time() - start:.0f} s")


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
