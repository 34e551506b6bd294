r"""Converts an encoder checkpoint between formats.

    python tools/convert.py --input=/path/to/all-MiniLM-L6-v2 \
        --output_format=keras_hub --output=runs/minilm_keras_hub

--input is a checkpoint directory in any format `zoo.load_encoder` reads
(Hugging Face, KerasHub preset, ours), a model directory of
tools/pretrain.py (its `encoder/` is used), or one of tools/train.py (the
encoder of its `best_model.keras`, e.g. to share a fine-tuned encoder).
--output_format is `native` (ours: `encoder.keras`, `vocab.txt`,
`tokenizer_config.json`; a BPE or SentencePiece tokenizer as its Hugging Face
files), `keras_hub` (the KerasHub backbone and tokenizer of the encoder's family:
BERT, RoBERTa, XLM-R, DistilBERT, ALBERT, ELECTRA or DeBERTa-v3, with its WordPiece,
byte-level BPE or SentencePiece tokenizer; loads with
`keras_hub.models.<Family>Backbone.from_preset`; what no KerasHub backbone holds,
e.g. ModernBERT, is refused in one line) or `huggingface` (`config.json`,
`model.safetensors`, `vocab.txt`, `tokenizer_config.json`; loads with
`transformers.BertModel.from_pretrained`). The output is written to a
temporary directory and renamed into place; an existing one is only replaced
with --overwrite.

With --with_head (and --output_format=huggingface) a fine-tuned model keeps
its task head: --input is a tools/train.py model directory or a `.keras`
file, written as the transformers class that holds its head
(`BertForSequenceClassification`, `BertForTokenClassification`,
`BertForQuestionAnswering`) with its labels in config.json; a checkpoint or
tools/pretrain.py run with a masked-LM head becomes `BertForMaskedLM`. What
transformers has no class for is refused in one line, or goes into an extra
file (a CRF's transitions, span NER's head) that the model card describes:
`zoo.runs.hf_task_export.export_hf_with_head`, docs/serving.md.

    python tools/convert.py --input=runs/conll_crf --output_format=huggingface \
        --with_head --output=runs/conll_crf_hf
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import nlpzoo.tools  # noqa: E402,F401  (quiets TensorFlow's C++ logging before it loads)

from absl import flags  # noqa: E402

from nlpzoo.tasks.io.ownership import NotOurDirectory, check_replaceable  # noqa: E402
from nlpzoo.zoo.runs import directory as md  # noqa: E402
from nlpzoo.tools.cli.errors import UserError, run  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("input", None, "Checkpoint or model directory to convert.")
flags.DEFINE_enum("output_format", "native", ("native", "keras_hub", "huggingface"),
                  "Format to write.")
flags.DEFINE_string("output", None, "Directory to create.")
flags.DEFINE_boolean("overwrite", False, "Replace an existing --output directory.")
flags.DEFINE_boolean("with_head", False, "With --output_format=huggingface: export the "
                     "fine-tuned model of --input (a tools/train.py directory or a .keras "
                     "file; a checkpoint with a masked-LM head) with its task head, as the "
                     "transformers class that holds it (BertForSequenceClassification, "
                     "BertForTokenClassification, BertForQuestionAnswering, BertForMaskedLM) "
                     "and its labels; what has no class goes into an extra file.")
flags.mark_flags_as_required(["input", "output"])


def _source(path):
    """(encoder, tokenizer, what) read from --input."""
    from nlpzoo.zoo.checkpoints import load_encoder, load_tokenizer

    if not os.path.isdir(path):
        raise UserError(f"--input={path}: no such directory")
    path = md.encoder_checkpoint(path)
    if os.path.exists(md.path(path, md.BEST_MODEL)):  # a tools/train.py model directory
        trained = md.load_trained(path)
        return (trained.model.get_layer("encoder"), trained.preprocessor.tokenizer(),
                f"the encoder of {md.path(path, md.BEST_MODEL)}")
    try:
        return load_encoder(path), load_tokenizer(path), path
    except (ValueError, OSError) as error:
        raise UserError(f"--input={path}: {error}")


def _export_with_head(output):
    """--with_head: the model of --input with its head, as its transformers class."""
    from nlpzoo.zoo.runs.hf_task_export import export_hf_with_head

    if FLAGS.output_format != "huggingface":
        raise UserError(f"--with_head writes a transformers class; give "
                        f"--output_format=huggingface, not {FLAGS.output_format}")
    try:
        result = export_hf_with_head(FLAGS.input, output, overwrite=FLAGS.overwrite,
                                     argv=sys.argv)
    except NotOurDirectory as error:
        raise UserError(f"--output={FLAGS.output}: {error}")
    except (ValueError, OSError) as error:
        raise UserError(f"cannot export --input={FLAGS.input} with its head: {error}")
    extra = f" and {', '.join(result.extra_files)}" if result.extra_files else ""
    print(f"wrote {FLAGS.input} as {result.architecture} to {output} (load it with "
          f"transformers.{result.auto_class}; a model card, README.md{extra})")


def main(argv):
    from nlpzoo.zoo.checkpoints import (
        export_hf_checkpoint,
        export_keras_hub_preset,
        save_encoder_checkpoint,
    )

    try:  # before anything is read: never a directory of the user's, the working one...
        check_replaceable(FLAGS.output, "--output", overwrite=FLAGS.overwrite)
    except NotOurDirectory as error:
        raise UserError(str(error))
    output = os.path.abspath(FLAGS.output)
    if FLAGS.with_head:
        return _export_with_head(output)
    encoder, tokenizer, what = _source(FLAGS.input)
    lowercase = tokenizer.lowercase
    write = {"native": save_encoder_checkpoint, "keras_hub": export_keras_hub_preset,
             "huggingface": export_hf_checkpoint}[FLAGS.output_format]
    try:
        write(encoder, output, tokenizer, lowercase,
              overwrite=FLAGS.overwrite)
    except NotOurDirectory as error:
        raise UserError(f"--output={FLAGS.output}: {error}")
    except ValueError as error:
        raise UserError(f"cannot write {what} as --output_format={FLAGS.output_format}: {error}")
    from nlpzoo.layers import transformer_of
    from nlpzoo.zoo.runs.model_card import conversion_card, write_model_card

    write_model_card(output, conversion_card(sys.argv, FLAGS.input, what, FLAGS.output_format,
                                             transformer_of(encoder).get_config(), lowercase))
    print(f"wrote {what} as a {FLAGS.output_format} checkpoint to {output} (with a model "
          "card, README.md)")


def entry_point():
    run(main)


if __name__ == "__main__":
    entry_point()
