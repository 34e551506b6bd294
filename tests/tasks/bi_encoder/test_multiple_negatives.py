"""The bi-encoder's multiple_negatives objective: reading pairs and hard negatives, the
pipeline's pairing, training through `fit`, and validation by retrieval (checked against
the vectors of `embed` ranked by NumPy)."""

import json

import numpy as np
import pytest
from absl import flags

from nlpzoo.tasks.bi_encoder.pipeline import text_ids
from nlpzoo.tasks.bi_encoder.readers import RankingPair
from nlpzoo.tasks.bi_encoder.task import BiEncoderTask
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.registry import get_task
from nlpzoo.tasks.retrieval import embed_texts, retrieval_metrics
from nlpzoo.tasks.sentence_embedding import top_k
from nlpzoo.tasks.text.preprocessor import TextPreprocessor
from nlpzoo.tasks.text.tokenizer import RESERVED_TOKENS
from nlpzoo.zoo import build_task_model

VOCAB = list(RESERVED_TOKENS) + "a b c d e f g h".split()
TINY = dict(num_layers=1, hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0)


def _jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def test_reads_pairs_with_labels_ignored_and_hard_negatives(tmp_path):
    path = _jsonl(tmp_path / "pairs.jsonl", [
        {"text": "a b", "text_pair": "b c", "hard_negative": "h h"},
        {"text": "c", "text_pair": "d", "label": "whatever"}])
    task = get_task("bi_encoder", objective="multiple_negatives")
    examples = task.read(path)
    assert [(e.text, e.text_pair, e.hard_negative, e.line) for e in examples] == [
        ("a b", "b c", "h h", 1), ("c", "d", None, 2)]
    assert all(isinstance(e, RankingPair) for e in examples) and task.label_names(examples) == []
    assert task.adapt(examples).options.hard_negatives
    assert not task.adapt(examples[1:]).options.hard_negatives
    assert task.monitor(0) == ("val_mrr_at_10", "max")
    table = tmp_path / "pairs.csv"  # no label column: none is needed
    table.write_text("text,text_pair\nwho wrote it,a play by him\n", encoding="utf-8")
    assert [(e.text, e.text_pair, e.hard_negative) for e in task.read(str(table))] == [
        ("who wrote it", "a play by him", None)]


@pytest.mark.parametrize("records, message", [
    ([{"text": "a", "text_pair": "b"}, {"text": "a"}],
     r"pairs.jsonl:2: a bi-encoder reads text pairs: this example has no 'text_pair'"),
    ([{"text": "a", "text_pair": "b", "hard_negative": 3}],
     r"pairs.jsonl:1: 'hard_negative' must be a non-empty string, found 3"),
    ([{"text_pair": "b"}], r"pairs.jsonl:1: expected an object with 'text'"),
])
def test_bad_pairs_name_file_and_line(tmp_path, records, message):
    path = _jsonl(tmp_path / "pairs.jsonl", records)
    with pytest.raises(DataFormatError, match=message):
        get_task("bi_encoder", objective="multiple_negatives").read(path)


def test_options_and_flags():
    values = flags.FlagValues()
    BiEncoderTask.define_flags(values)
    values(["train", "--objective=multiple_negatives", "--ranking_scale=30",
            "--symmetric_ranking"])
    options = BiEncoderTask.options_from_flags(values)[0]
    task = BiEncoderTask(**options)
    assert (task.options.ranking_scale, task.options.symmetric_ranking) == (30.0, True)
    loss = task.loss()
    assert (loss.scale, loss.symmetric) == (30.0, True)
    with pytest.raises(ValueError, match="hard negatives are read by the multiple_negatives"):
        BiEncoderTask(objective="cosine", hard_negatives=True)
    with pytest.raises(ValueError, match="ranking_scale must be positive"):
        BiEncoderTask(objective="multiple_negatives", ranking_scale=0)


def _pairs(count, seed=0):
    """Distinct anchors, each positive starting with its anchor's words; every third pair
    repeats the positive of the pair before (a shared paragraph); every fourth has no hard
    negative."""
    rng = np.random.default_rng(seed)
    words = "a b c d e f g h".split()
    pairs, anchors = [], set()
    while len(pairs) < count:
        anchor = " ".join(rng.choice(words, size=rng.integers(1, 6)))
        if anchor in anchors:
            continue
        anchors.add(anchor)
        index = len(pairs)
        positive = (pairs[-1].text_pair if index % 3 == 2
                    else anchor + " " + " ".join(rng.choice(words, size=rng.integers(1, 9))))
        pairs.append(RankingPair(anchor, "", positive, hard_negative=(
            None if index % 4 == 0 else " ".join(rng.choice(words, size=3))), line=index + 1))
    return pairs


def test_training_batches_keep_each_pair_together_and_carry_text_ids():
    task = get_task("bi_encoder", objective="multiple_negatives", hard_negatives=True)
    preprocessor = TextPreprocessor(VOCAB, max_seq_length=24)
    examples = _pairs(40)
    dataset = task.make_dataset(examples, preprocessor, [], batch_size=8, training=True,
                                seed=(3, 0))

    def ids(text):
        return tuple(int(i) for i in preprocessor.encode([text])["token_ids"][0].numpy())

    targets_of = text_ids(examples)
    # Equal texts, equal ids; a missing hard negative: -1.
    texts = [text for e in examples for text in (e.text_pair, e.hard_negative)]
    for (text, text_id) in zip(texts, targets_of.reshape(-1)):
        assert (text is None) == (text_id == -1)
        assert all((text == other) == (text_id == other_id) for other, other_id in
                   zip(texts, targets_of.reshape(-1)) if text is not None and other is not None)
    expected = {}  # anchor's tokens → (positive's tokens, hard negative's, text ids)
    for example, target in zip(examples, targets_of):
        expected[ids(example.text)] = (ids(example.text_pair), ids(example.hard_negative or ""),
                                       tuple(target))
    rows = 0
    for features, targets in dataset:
        for row in range(len(targets)):
            def unpadded(name):
                values = features[name][row].numpy()
                return tuple(int(i) for i in values[features[name.replace(
                    "token_ids", "padding_mask")][row].numpy() > 0])

            positive, negative, positive_id = expected[unpadded("token_ids")]
            assert unpadded("pair_token_ids") == positive
            assert unpadded("negative_token_ids") == negative
            assert tuple(int(i) for i in targets[row]) == positive_id
            rows += 1
    assert rows == 40


@pytest.fixture(scope="module")
def ranking_model():
    task = get_task("bi_encoder", objective="multiple_negatives", hard_negatives=True)
    model = build_task_model(task, "bert_tiny", **TINY, vocabulary_size=len(VOCAB),
                             learning_rate=1e-3)
    return task, model, TextPreprocessor(VOCAB, max_seq_length=24)


def test_fit_lowers_the_training_loss(ranking_model):
    task, model, preprocessor = ranking_model
    dataset = task.make_dataset(_pairs(64, seed=1), preprocessor, [], batch_size=16,
                                training=True, seed=(0, 0))
    history = model.fit(dataset, epochs=4, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_validation_is_retrieval_over_the_validation_pairs(ranking_model, tmp_path):
    task, model, preprocessor = ranking_model
    examples = _pairs(30, seed=2)
    dataset = task.make_dataset(examples, preprocessor, [], batch_size=7)
    metrics = task.evaluate(model, dataset, examples, [])

    # By hand: the distinct anchors search the distinct positives with `embed`'s vectors.
    anchors = list(dict.fromkeys(e.text for e in examples))
    positives = list(dict.fromkeys(e.text_pair for e in examples))
    relevant = [{positives.index(e.text_pair) for e in examples if e.text == anchor}
                for anchor in anchors]
    anchor_vectors = embed_texts(model.embed, preprocessor, anchors)
    positive_vectors = embed_texts(model.embed, preprocessor, positives)
    ranked, _ = top_k(anchor_vectors, positive_vectors, k=10)
    expected = retrieval_metrics([row.tolist() for row in ranked], relevant)
    for name in ("mrr_at_10", "recall_at_1", "recall_at_10", "ndcg_at_10"):
        assert metrics[name] == pytest.approx(expected[name], abs=1e-9), name
    assert (metrics["queries"], metrics["documents"], metrics["examples"]) == (
        len(anchors), len(positives), 30)

    # The same test as files: tools/evaluate.py --corpus's path gives the same figures.
    corpus = _jsonl(tmp_path / "corpus.jsonl", [{"id": f"p{i}", "text": text}
                                                 for i, text in enumerate(positives)])
    queries = _jsonl(tmp_path / "queries.jsonl", [
        {"query": anchor, "relevant": [f"p{i}" for i in sorted(wanted)]}
        for anchor, wanted in zip(anchors, relevant)])
    from_files = task.evaluate_corpus(model, preprocessor, queries, corpus, batch_size=5)
    for name in ("mrr_at_10", "recall_at_1", "recall_at_10", "ndcg_at_10"):
        assert from_files[name] == pytest.approx(expected[name], abs=1e-9), name


def test_other_tasks_refuse_a_corpus():
    with pytest.raises(ValueError, match="a tagging model does not embed texts for retrieval"):
        get_task("tagging").evaluate_corpus(None, None, "q.jsonl", "c.jsonl")
