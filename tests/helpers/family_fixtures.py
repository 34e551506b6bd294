"""The tiny encoder preset and fixture tokenizer of each encoder family, for the tests that
run every family (tests/fixtures/tokenizers/: written by transformers 5.24)."""

import os

import numpy as np

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


def encoded_batch(tokenizer, texts, max_length):
    """`texts` encoded by `tokenizer` (special tokens included) and right-padded: int32
    `token_ids`, `padding_mask` and `segment_ids`, whose second half of the columns is
    segment 1, so that an encoder must read the right row of its segment table."""
    rows = [tokenizer.encode(text, max_length=max_length) for text in texts]
    length = max(map(len, rows))
    token_ids = np.full((len(rows), length), tokenizer.pad_id, "int32")
    padding_mask = np.zeros_like(token_ids)
    for index, row in enumerate(rows):
        token_ids[index, :len(row)] = row
        padding_mask[index, :len(row)] = 1
    segment_ids = np.zeros_like(token_ids)
    segment_ids[:, length // 2:] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
