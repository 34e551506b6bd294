"""A trained run (or a checkpoint with an MLM head) → a Hugging Face directory with its head.

What `tools/convert.py --with_head` calls: `export_hf_with_head` loads the
model `path` holds (`load_model_with_head`) and writes it with
`zoo.checkpoints.export_hf_task_model` (the table of transformers classes is
there), with the model card of a conversion (`model_card.conversion_card`:
the command, sizes, software) plus what the export says about reading its
outputs (which subword carries a word's label, the extra files).

Examples:
>>> export_hf_with_head("/no/such/run", "/tmp/never")
Traceback (most recent call last):
...
ValueError: /no/such/run: no such file or directory
"""

import os

from nlpzoo.layers import transformer_of
from nlpzoo.zoo.checkpoints.hf_task_heads import PIPELINE_TAGS, export_hf_task_model
from nlpzoo.zoo.runs import directory as md
from nlpzoo.zoo.runs.model_card import conversion_card, write_model_card


def load_model_with_head(path):
    """(model, tokenizer, lowercase, labels) of what `path` holds: the tokenizer a
    `SubwordTokenizer` (a trained run's, of any kind) or WordPiece tokens (a checkpoint's).

    `path` is a tools/train.py run directory (its best_model.keras), a
    `.keras` file, or a checkpoint directory (any format; a tools/pretrain.py
    run) with a masked-LM head, on which a fill-mask model is built.

    Raises:
        ValueError: `path` does not exist, is no trained run, or is a
            checkpoint without a masked-LM head (one line each).
    """
    from nlpzoo.tasks.fill_mask.model import FillMaskModel
    from nlpzoo.zoo.checkpoints import load_encoder, load_pretraining_heads, load_tokenizer

    if os.path.isfile(path) or os.path.exists(md.path(path, md.BEST_MODEL)):
        trained = (md.load_trained(model_path=path) if os.path.isfile(path)
                   else md.load_trained(model_dir=path))
        tokenizer = trained.preprocessor.tokenizer()  # of any kind, exported as such
        return trained.model, tokenizer, tokenizer.lowercase, list(trained.labels)
    if not os.path.isdir(path):
        raise ValueError(f"{path}: no such file or directory")
    checkpoint = md.encoder_checkpoint(path)
    model = FillMaskModel(load_encoder(checkpoint))
    load_pretraining_heads(model, checkpoint, required=("mlm_head",))
    tokenizer = load_tokenizer(checkpoint)
    return model, tokenizer, tokenizer.lowercase, []


def task_head_card(result, model, lowercase, argv, source):
    """The model card of an export with its head: `conversion_card`'s, retitled, with the
    class, labels, task options and the export's notes on reading the outputs."""
    card = conversion_card(argv, source, source, "huggingface",
                           transformer_of(model.encoder).get_config(), lowercase)
    limits = [line for line in card["limits"] if not line.startswith("An encoder only")]
    if result.kind is None:
        card["summary"] = ("A fine-tuned model exported by nlp-transfer-zoo's "
                           "`tools/convert.py --with_head`. Load its encoder with "
                           "`transformers.AutoModel.from_pretrained(\"<this directory>\")`; "
                           "its task head has no transformers class (see Limits).")
    else:
        card["summary"] = (f"A fine-tuned model exported with its task head by nlp-transfer-"
                           f"zoo's `tools/convert.py --with_head`. Load it with `transformers."
                           f"{result.auto_class}.from_pretrained(\"<this directory>\")` "
                           f"(`{result.architecture}`); its logits are the fine-tuned model's.")
        card["pipeline_tag"] = PIPELINE_TAGS[result.kind]
    card.update(
        title=f"{result.architecture}: a fine-tuned model with its head",
        task=result.kind or "encoder", labels=list(result.labels) or None,
        task_options=(getattr(model, "task_metadata", None) or {}).get("task_options"),
        limits=list(result.notes) + limits,
        model_facts=[("transformers class", result.architecture)] + card["model_facts"]
        + ([("Extra files", ", ".join(result.extra_files))] if result.extra_files else []))
    return card


def export_hf_with_head(path, directory, overwrite=False, argv=None):
    """Exports what `path` holds with its head (`export_hf_task_model`) and a model card.

    Returns:
        The `HFTaskExport` (class, Auto class, labels, extra files, notes).

    Raises:
        ValueError: as `load_model_with_head` and `export_hf_task_model`
            (one line naming what transformers has no class for).
    """
    model, vocabulary, lowercase, labels = load_model_with_head(path)

    def write_card(temporary, result):
        write_model_card(temporary, task_head_card(result, model, lowercase,
                                                   argv or ["convert.py"], path))

    return export_hf_task_model(model, directory, vocabulary=vocabulary, lowercase=lowercase,
                                labels=labels, overwrite=overwrite, write_card=write_card)
