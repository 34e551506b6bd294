"""Pretrained checkpoints by handle: `hf://org/name` and KerasHub's `kaggle://…` presets.

A handle stands for a checkpoint directory wherever one is taken
(`load_encoder`, `load_tokenizer`, `load_pretrained`, `build_model`,
`--init_checkpoint`): `checkpoint_directory` resolves it to the local copy
that the owner's own library fetches and caches, so this project has no
downloader of its own:

- `hf://<org>/<name>[@<revision>]`: `huggingface_hub.snapshot_download`,
  the configuration, safetensors weights and tokenizer files only (never
  pickles), into the Hugging Face cache (`HF_HUB_CACHE`); with
  `HF_HUB_OFFLINE=1` only the cache is read.
- `kaggle://<owner>/<model>/keras/<variation>[/<version>]`: `kagglehub`,
  what KerasHub's `from_preset` uses, into its cache (`KAGGLEHUB_CACHE`).

`PRETRAINED_CHECKPOINTS` lists the well-known checkpoints of each family
with the architecture preset of their shape (`list_presets(pretrained=True)`).

Examples:
>>> is_handle("hf://sentence-transformers/all-MiniLM-L6-v2"), is_handle("/tmp/model")
(True, False)
>>> parse_hf_handle("hf://google-bert/bert-base-cased@main")
('google-bert/bert-base-cased', 'main')
>>> resolve_handle("hf://no-name")
Traceback (most recent call last):
...
ValueError: hf://no-name: a Hugging Face handle is hf://<org>/<name>[@<revision>]
"""

import functools
import os

HF_SCHEME, KAGGLE_SCHEME = "hf://", "kaggle://"
# What a checkpoint directory needs: no pickled weights are ever fetched.
HF_FILES = ("*.json", "*.safetensors", "vocab.txt", "merges.txt", "*.model")

# Handle → the architecture preset of its shape (zoo.presets.ENCODER_PRESETS).
PRETRAINED_CHECKPOINTS = {
    "hf://google-bert/bert-base-uncased": "bert_base",
    "hf://google-bert/bert-base-cased": "bert_base_cased",
    "hf://google-bert/bert-base-multilingual-cased": "bert_base_multilingual_cased",
    "hf://FacebookAI/roberta-base": "roberta_base",
    "hf://FacebookAI/xlm-roberta-base": "xlm_roberta_base",
    "hf://distilbert/distilbert-base-uncased": "distilbert_base",
    "hf://albert/albert-base-v2": "albert_base",
    "hf://google/electra-base-discriminator": "electra_base",
    "hf://sentence-transformers/all-MiniLM-L6-v2": "minilm_l6_h384",
    "hf://microsoft/deberta-v3-base": "deberta_v3_base",
    "hf://microsoft/deberta-v3-small": "deberta_v3_small",
    "hf://microsoft/deberta-v3-xsmall": "deberta_v3_xsmall",
    "hf://answerdotai/ModernBERT-base": "modernbert_base",
    "hf://answerdotai/ModernBERT-large": "modernbert_large",
    "kaggle://keras/bert/keras/bert_base_en_uncased": "bert_base",
}


def is_handle(path):
    """Whether `path` is a checkpoint handle (`hf://…`, `kaggle://…`), not a local path."""
    return isinstance(path, str) and path.startswith((HF_SCHEME, KAGGLE_SCHEME))


def parse_hf_handle(handle):
    """`(repo_id, revision or None)` of `hf://<org>/<name>[@<revision>]`."""
    name, at, revision = handle[len(HF_SCHEME):].partition("@")
    parts = name.split("/")
    if len(parts) != 2 or not all(parts) or (at and not revision):
        raise ValueError(f"{handle}: a Hugging Face handle is hf://<org>/<name>[@<revision>]")
    return name, revision or None


@functools.lru_cache(maxsize=None)
def resolve_handle(handle):
    """The local directory of a handle's checkpoint, fetched into its library's cache.

    Raises:
        ValueError: a malformed handle, or one that cannot be fetched (offline and not
            cached, unknown, private); the message says which and how to fix it.
    """
    if handle.startswith(HF_SCHEME):
        return _hf_snapshot(handle)
    if handle.startswith(KAGGLE_SCHEME):
        return _kaggle_model(handle)
    raise ValueError(f"{handle}: not a checkpoint handle (hf://… or kaggle://…)")


def _hf_snapshot(handle):
    repo_id, revision = parse_hf_handle(handle)
    import huggingface_hub
    from huggingface_hub import constants

    try:
        return huggingface_hub.snapshot_download(
            repo_id, revision=revision, allow_patterns=list(HF_FILES),
            local_files_only=bool(constants.HF_HUB_OFFLINE))
    except Exception as error:  # the library's own errors say what went wrong
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{handle}: cannot be fetched from the Hugging Face Hub or found in its "
                         f"cache ({constants.HF_HUB_CACHE}): {detail}") from None


def _kaggle_model(handle):
    name = handle[len(KAGGLE_SCHEME):]
    if len(name.split("/")) not in (4, 5) or not all(name.split("/")):
        raise ValueError(f"{handle}: a Kaggle handle is "
                         "kaggle://<owner>/<model>/<framework>/<variation>[/<version>]")
    import kagglehub

    try:
        return kagglehub.model_download(name)
    except Exception as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{handle}: cannot be fetched from Kaggle or found in kagglehub's cache "
                         f"({os.environ.get('KAGGLEHUB_CACHE', '~/.cache/kagglehub')}): "
                         f"{detail}") from None
