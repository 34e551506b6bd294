"""From a corpus's documents to the masked training stream and the fixed held-out batches.

The one recipe tools/pretrain.py follows, kept here so that anything which must
see exactly the batches a run trains on (a test comparing a run's first step
with a model loaded on its own, a benchmark) builds them with the same code:
`pack_corpus` (tokenize, pack, hold out a random share; NumPy, seeded) then
`masked_datasets` (the `tf.data` pipelines of `make_pretraining_dataset`, with
the corpus's unigram distribution for random replacements).

Examples:
>>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
>>> tokenizer = WordPieceTokenizer(
...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "sky", "is", "blue", "."])
>>> documents = [["The sky is blue ."] * 3] * 8
>>> train, held_out = pack_corpus(documents, tokenizer, "mlm", 16, seed=0,
...                               short_sequence_probability=0.0, eval_fraction=0.25)
>>> len(train["token_ids"]), len(held_out["token_ids"])
(12, 4)
>>> train_dataset, eval_dataset = masked_datasets(
...     train, held_out, tokenizer, objective="mlm", batch_size=2, max_predictions=3, seed=0)
>>> x, y = next(iter(train_dataset))
>>> tuple(x["token_ids"].shape), tuple(y["mlm_labels"].shape)
((2, 16), (2, 3))
"""

import numpy as np

from nlpzoo.tasks.text.masking import unigram_distribution
from nlpzoo.tasks.pretraining.pair_objectives import pair_objective
from nlpzoo.tasks.pretraining.packing import (
    pack_sentence_pairs,
    pack_single_segments,
    tokenize_documents,
)
from nlpzoo.tasks.pretraining.pipeline import make_pretraining_dataset


def pack_corpus(documents, tokenizer, objective, max_seq_length, *, seed,
                short_sequence_probability=0.1, eval_fraction=0.02):
    """(train, held_out) packed arrays of `documents`; a fixed random share is held out.

    Args:
        documents: lists of lines (`tasks.text.corpus.read_corpus`).
        tokenizer: a `SubwordTokenizer` of any kind (its word starts:
            `continuation_pieces`).
        objective: "mlm_nsp" and "mlm_sop" pack segment pairs
            (`pair_objectives`), the others single segments.
        max_seq_length: the packed length T.
        seed: seeds the packing and the held-out draw (NumPy).
        short_sequence_probability: share of sequences packed shorter, as in BERT.
        eval_fraction: share of the packed sequences held out (at least one
            when above 0).

    Returns:
        Two dicts of NumPy arrays (see `pack_single_segments`,
        `pack_sentence_pairs`).

    Raises:
        ValueError: NSP pairs from fewer than two documents, SOP pairs from
            documents of one segment each, or a corpus too small to hold out
            `eval_fraction`.
    """
    rng = np.random.default_rng(seed)
    options = dict(cls_id=tokenizer.cls_id, sep_id=tokenizer.sep_id, pad_id=tokenizer.pad_id,
                   continuation=continuation_pieces(tokenizer), rng=rng,
                   short_sequence_probability=short_sequence_probability)
    tokenized = tokenize_documents(documents, tokenizer)
    pair = pair_objective(objective)
    if pair is not None:
        if len(tokenized) < pair.min_documents:
            needed = {1: "one document", 2: "two documents"}[pair.min_documents]
            raise ValueError(f"the {objective} objective needs at least {needed} in the corpus")
        arrays = pack_sentence_pairs(tokenized, max_seq_length, objective=objective, **options)
    else:
        arrays = pack_single_segments(tokenized, max_seq_length, **options)
    order = rng.permutation(len(arrays["token_ids"]))
    num_eval = int(round(eval_fraction * len(order)))
    if eval_fraction > 0:
        num_eval = max(num_eval, 1)
    if num_eval >= len(order):
        raise ValueError(f"the corpus packs into only {len(order)} sequences: too few to hold "
                         f"out {eval_fraction:.0%} for validation")
    train = {key: value[order[num_eval:]] for key, value in arrays.items()}
    held_out = {key: value[order[:num_eval]] for key, value in arrays.items()}
    return train, held_out


def continuation_pieces(tokenizer):
    """bool [V]: the pieces that never start a word (`SubwordTokenizer.word_start_pieces`
    negated: WordPiece's `##` pieces, BPE's without "Ġ", SentencePiece's without "▁"),
    where packing does not cut and whole-word masking does not start a word.

    >>> from nlpzoo.tasks.text.tokenizer import WordPieceTokenizer
    >>> continuation_pieces(WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "##s"])).tolist()
    [False, False, False, False, True]
    """
    return ~np.asarray(tokenizer.word_start_pieces(), bool)


def special_ids(tokenizer):
    """The ids masking never selects: [PAD], [UNK], [CLS], [SEP], [MASK] ([PAD] first)."""
    return (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id,
            tokenizer.mask_id)


def masked_datasets(train, held_out, tokenizer, *, objective, batch_size, max_predictions,
                    seed, uniform_replacement=False, whole_word=False):
    """(endless re-masked training stream, held-out batches with fixed masks or None).

    Args:
        train, held_out: from `pack_corpus`.
        tokenizer: the `SubwordTokenizer` that packed them.
        objective: "mlm", "mlm_nsp", "mlm_sop" or "span_sbo".
        batch_size: sequences per batch.
        max_predictions: prediction slots per sequence.
        seed: masking and shuffling seed (with TensorFlow's global seed,
            which tools/pretrain.py sets to the same value).
        uniform_replacement: draw the 10% random replacements uniformly,
            not from the training sequences' unigram distribution.
        whole_word: whole-word masking (MLM objectives).
    """
    specials = special_ids(tokenizer)
    unigram = None
    if not uniform_replacement:
        unigram = unigram_distribution(train["token_ids"], len(tokenizer.vocabulary), specials)
    options = dict(objective=objective, continuation=continuation_pieces(tokenizer),
                   special_ids=specials, mask_id=tokenizer.mask_id, batch_size=batch_size,
                   max_predictions=max_predictions, unigram_probabilities=unigram,
                   whole_word=whole_word, seed=seed)
    train_dataset = make_pretraining_dataset(train, training=True, **options)
    eval_dataset = None
    if len(held_out["token_ids"]):
        eval_dataset = make_pretraining_dataset(held_out, training=False, **options)
    return train_dataset, eval_dataset
