"""Every task on every encoder family: `run_task_test` on the family's own tokenizer.

Each case reads a bundled sample through the task (`Task.read`, `make_dataset`),
with the preprocessor of a task model built on a family's tiny preset and the
tokenizer of that family's scheme (tests/fixtures/tokenizers/, written by
transformers): byte-level BPE for RoBERTa, SentencePiece for ALBERT and XLM-R
(XLM-R is RoBERTa's shape, so `roberta_tiny` with the XLM-R tokenizer),
WordPiece for DistilBERT, ELECTRA and BERT, DeBERTa-v3's SentencePiece,
ModernBERT's byte-level BPE (`[CLS] a [SEP]`). `run_task_test` then trains the
model and round-trips its `.keras` file, each pair in a process of its own. Where a
pair brings something no other pair does (`COVERING_PAIRS`: every task's head on BERT,
every other family's encoder once), the first training runs under XLA and a second model
trains under `mixed_bfloat16` with float32 logits; the other pairs combine the same
encoder and head layers, which meet only at the encoder's output, so they train once,
without XLA (what that saves: docs/performance.md). Beyond that, each case checks what
the family's tokenizer must get right for the task: the word-level tasks' word starts are the first piece of each word as the tokenizer
splits it alone, and the text tasks' features are the tokenizer's own `encode`.

The default run covers RoBERTa, XLM-R, ALBERT, DistilBERT and ELECTRA once each, on
a task that test_family_fine_tuning.py does not already train on them (BERT: each
task's own tests; DeBERTa-v3 and ModernBERT: their classifier and tagger there);
`-m slow` runs every pair.
"""

import json
import os

import numpy as np
import pytest

from nlpzoo.tasks.registry import get_task
from nlpzoo.zoo import build_task_model, load_tokenizer
from tests.helpers.family_fixtures import FAMILIES as OTHER_FAMILIES, TOKENIZERS
from tests.helpers.fresh_process import call_in_a_fresh_process
from tests.helpers.paths import ROOT
from tests.helpers.task_checks import run_task_test

SAMPLES = os.path.join(ROOT, "samples")
# family → (encoder preset, tokenizer fixture directory): BERT and the others.
FAMILIES = {"bert": ("bert_tiny", "bert_uncased_wordpiece"), **OTHER_FAMILIES}
WORD_TASKS = ("tagging", "crf_tagging", "span_ner")
# case → (registered task, task options, head options, sample file)
CASES = {
    "classification": ("classification", {}, {}, "trec/train.label"),
    "pair_classification": ("classification", {"paired_input": True}, {}, "mrpc/train.tsv"),
    "tagging": ("tagging", {}, {}, "conll2003/train.txt"),
    "crf_tagging": ("tagging", {}, {"head": "crf"}, "conll2003/train.txt"),
    "span_ner": ("span_ner", {}, {}, "conll2003/train.txt"),
    "bi_encoder": ("bi_encoder", {}, {}, "mrpc/train.tsv"),
    "question_answering": ("question_answering", {}, {}, None),
}
# The default run: each family but BERT once, on the tasks that
# test_family_fine_tuning.py does not run on them (BERT: each task's own tests).
DEFAULT = {
    ("roberta", "span_ner"), ("xlm-roberta", "pair_classification"),
    ("albert", "crf_tagging"), ("distilbert", "question_answering"),
    ("electra", "bi_encoder"),
}
# Each task's head on BERT, and each other family's encoder once (DEFAULT, plus the two
# families DEFAULT leaves out), train under XLA and under mixed precision.
COVERING_PAIRS = ({("bert", case) for case in CASES} | DEFAULT
                  | {("deberta-v2", "classification"), ("modernbert", "classification")})
BATCH = 8
MAX_SEQ_LENGTH = 64


def _squad(directory):
    """A SQuAD v1.1 file of eight questions whose answers are exact substrings."""
    context = ("The Normans were the people who in the 10th and 11th centuries gave their "
               "name to Normandy, a region in France. They descended from Norse raiders.")
    questions = [("Who gave their name to Normandy?", "The Normans"),
                 ("In what country is Normandy?", "France"),
                 ("When did the Normans name Normandy?", "10th and 11th centuries"),
                 ("Who did the Normans descend from?", "Norse raiders"),
                 ("What is Normandy?", "a region in France"),
                 ("What did the Normans give Normandy?", "their name"),
                 ("Where is the region?", "France"),
                 ("Who were the raiders?", "Norse")]
    qas = [{"id": str(i), "question": q,
            "answers": [{"text": a, "answer_start": context.index(a)}]}
           for i, (q, a) in enumerate(questions)]
    path = os.path.join(directory, "squad.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"version": "1.1", "data": [{"title": "Normans", "paragraphs": [
            {"context": context, "qas": qas}]}]}, f)
    return path


def _pairs():
    return [pytest.param(family, case, marks=() if (family, case) in DEFAULT
                         else pytest.mark.slow)
            for family in FAMILIES for case in CASES]


@pytest.mark.parametrize("family,case", _pairs())
def test_every_task_trains_compiles_and_saves_on_every_family(family, case, tmp_path):
    # A process of its own for each pair: the memory TensorFlow keeps of a pair's models
    # goes back when it ends (tests/helpers/fresh_process.py).
    call_in_a_fresh_process(train_task_on_family, family, case, str(tmp_path))


def train_task_on_family(family, case, directory):
    """The test of one pair, in the process `call_in_a_fresh_process` starts."""
    preset, tokenizer_dir = FAMILIES[family]
    task_name, options, head, sample = CASES[case]
    tokenizer = load_tokenizer(os.path.join(TOKENIZERS, tokenizer_dir))
    task = get_task(task_name, **options)
    path = _squad(directory) if sample is None else os.path.join(SAMPLES, sample)
    examples = task.read(path)[:BATCH]
    labels = task.label_names(examples)
    head = {**task.model_head_options(labels), **head}

    def build(jit_compile):
        return build_task_model(task, preset, tokenizer=tokenizer, jit_compile=jit_compile,
                                max_seq_length=MAX_SEQ_LENGTH, learning_rate=3e-3, **head)

    preprocessor = task.preprocessor_of(build(jit_compile=False).preprocessor)
    assert preprocessor.tokenizer().kind == tokenizer.kind
    examples = task.prediction_examples(examples, preprocessor)  # long sentences: windows
    dataset = task.make_dataset(examples, preprocessor, labels, batch_size=len(examples))
    # tasks/text/autotuning.py: an autotuned pipeline's iterators end only at a wake-up.
    assert dataset.options().autotune.enabled is False
    [(features, targets)] = [(dict(x), y) for x, y in dataset.take(1)]
    features = {name: np.asarray(value) for name, value in features.items()}
    if case in WORD_TASKS:
        _check_word_starts(features, examples, tokenizer)
    elif case == "classification":
        _check_single_texts(features, examples, tokenizer)
    targets = np.asarray(targets) if not isinstance(targets, dict) else {
        name: np.asarray(value) for name, value in targets.items()}
    covering = (family, case) in COVERING_PAIRS
    run_task_test(build, features, targets, epochs=2, jit_compile=covering,
                  mixed_precision_policies=("mixed_bfloat16",) if covering else ())


def _check_word_starts(features, sentences, tokenizer):
    """Each word's start is the first piece of that word, as the tokenizer splits it
    (the words that fit in the sequence: `word_mask`)."""
    for row, sentence in enumerate(sentences):
        pieces = tokenizer.word_pieces(list(sentence.words)).to_list()
        count = int(features["word_mask"][row].sum())
        assert 0 < count <= len(pieces)
        starts = features["word_starts"][row][:count]
        assert [features["token_ids"][row][start] for start in starts] == [
            word[0] for word in pieces[:count]], row


def _check_single_texts(features, examples, tokenizer):
    """A text's features are the tokenizer's `encode` of it, padded."""
    for row, example in enumerate(examples):
        expected = tokenizer.encode(example.text, max_length=MAX_SEQ_LENGTH)
        length = int(features["padding_mask"][row].sum())
        assert list(features["token_ids"][row][:length]) == expected, row


def test_every_family_and_every_task_is_compiled_under_xla_and_mixed_precision_somewhere():
    assert {family for family, _ in COVERING_PAIRS} == set(FAMILIES)
    assert {case for _, case in COVERING_PAIRS} == set(CASES)
    assert DEFAULT <= COVERING_PAIRS  # the default run keeps its XLA and mixed-precision checks
