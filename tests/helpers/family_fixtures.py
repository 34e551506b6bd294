"""The tiny encoder preset and fixture tokenizer of each encoder family, for the tests that
run every family (tests/fixtures/tokenizers/: written by transformers 5.24)."""

import os

from tests.helpers.paths import ROOT

TOKENIZERS = os.path.join(ROOT, "tests", "fixtures", "tokenizers")
# family (model_type) → (encoder preset, tokenizer fixture directory under TOKENIZERS);
# XLM-R is RoBERTa's shape with its own SentencePiece tokenizer.
FAMILIES = {
    "roberta": ("roberta_tiny", "roberta_bpe/tokenizer_json"),
    "xlm-roberta": ("roberta_tiny", "xlm_roberta_spm/tokenizer_json"),
    "albert": ("albert_tiny", "albert_spm/legacy"),
    "distilbert": ("distilbert_tiny", "bert_uncased_wordpiece"),
    "electra": ("electra_tiny", "bert_cased_wordpiece"),
    "deberta-v2": ("deberta_tiny", "deberta_v3_spm/legacy"),
    "modernbert": ("modernbert_tiny", "modernbert_bpe/tokenizer_json"),
}
