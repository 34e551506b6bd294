"""`tools/train.py --objective=multiple_negatives` on generated pairs, then `tools/evaluate.py
--corpus` and `tools/embed.py --corpus` on the trained model, and their one-line errors.

Marked slow: four TensorFlow starts and a short training (about 90 s on the 2-core machine).
"""

import json
import os

import pytest

from tests.helpers.binaries import json_line, run_tool, run_tools

pytestmark = pytest.mark.slow

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def _write_jsonl(path, records):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(record) + "\n" for record in records)
    return str(path)


def _pairs(count, seed):
    """(topic words, topic words + two more): a query and the paragraph it belongs to."""
    import random

    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        topic = rng.sample(WORDS, 3)
        pairs.append({"text": " ".join(topic), "text_pair": " ".join(topic + rng.sample(WORDS, 2))})
    return pairs


@pytest.fixture(scope="module")
def retriever(tmp_path_factory):
    base = tmp_path_factory.mktemp("retrieval")
    train = _write_jsonl(base / "train.jsonl", _pairs(64, 1))
    dev_pairs = _pairs(24, 2)
    dev = _write_jsonl(base / "dev.jsonl", dev_pairs)
    documents = list(dict.fromkeys(pair["text_pair"] for pair in dev_pairs))
    corpus = _write_jsonl(base / "corpus.jsonl", [{"id": f"d{i}", "text": text}
                                                  for i, text in enumerate(documents)])
    queries = _write_jsonl(base / "queries.jsonl", [
        {"query": pair["text"], "relevant": [f"d{documents.index(pair['text_pair'])}"]}
        for pair in dev_pairs])
    model_dir = str(base / "run")
    trained = run_tool("train.py", "--task=bi_encoder", "--objective=multiple_negatives",
                       "--symmetric_ranking", "--train_data", train, "--eval_data", dev,
                       "--model_dir", model_dir, "--preset=bert_tiny", "--epochs=2",
                       "--batch_size=16", "--vocab_size=100", "--max_seq_length=16",
                       "--learning_rate=1e-3", "--mixed_precision=float32")
    assert trained.returncode == 0, trained.stderr[-3000:]
    return base, model_dir, corpus, queries, json_line(trained.stdout)


def test_training_validates_by_retrieval_and_evaluate_corpus_agrees(retriever):
    base, model_dir, corpus, queries, final = retriever
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    assert config["monitor"] == "val_mrr_at_10"
    assert config["task_options"]["objective"] == "multiple_negatives"
    assert config["task_options"]["symmetric_ranking"] is True
    assert set(final) >= {"mrr_at_10", "recall_at_1", "recall_at_10", "ndcg_at_10"}
    bad_queries = _write_jsonl(base / "bad_queries.jsonl", [
        {"query": "alpha beta", "relevant": ["d0"]}, {"query": "gamma", "relevant": ["d999"]}])
    no_relevant = _write_jsonl(base / "no_relevant.jsonl", [{"query": "alpha beta"}])
    results = run_tools({
        "evaluate": ("evaluate.py", "--model_dir", model_dir, "--data", queries,
                     "--corpus", corpus),
        "bad id": ("evaluate.py", "--model_dir", model_dir, "--data", bad_queries,
                   "--corpus", corpus),
        "no column": ("evaluate.py", "--model_dir", model_dir, "--data", no_relevant,
                      "--corpus", corpus),
        "search": ("embed.py", "--model_dir", model_dir, "--corpus", corpus,
                   "--query=alpha beta gamma", "--top_k=3", "--block_size=5"),
    }, at_once=2)
    evaluated = results["evaluate"]
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    metrics = json_line(evaluated.stdout)
    # The validation pairs as a corpus: the same retrieval as the run's final evaluation.
    for name in ("mrr_at_10", "recall_at_1", "recall_at_10", "ndcg_at_10"):
        assert metrics[name] == pytest.approx(final[name], abs=1e-6), name
    assert metrics["queries"] == 24

    for name, message in (
            ("bad id", f"error: {base}/bad_queries.jsonl:2: relevant id 'd999' is not in the "
                       f"corpus ({corpus}, "),
            ("no column", f"error: {base}/no_relevant.jsonl:1: expected \"relevant\": a "
                          "non-empty list of document ids, found None")):
        result = results[name]
        assert result.returncode == 1
        lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and lines[0].startswith(message), result.stderr[-2000:]

    search = results["search"]
    assert search.returncode == 0, search.stderr[-3000:]
    lines = search.stdout.splitlines()
    assert lines[0] == "query: alpha beta gamma" and len(lines) == 4
    assert all("(id d" in line for line in lines[1:])
