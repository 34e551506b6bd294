import random

import pytest

from nlpzoo.tasks.tagging.metrics import entity_scores

seqeval_metrics = pytest.importorskip("seqeval.metrics")

# seqeval warns on every zero division; the value (0.0) is what is compared.
pytestmark = pytest.mark.filterwarnings("ignore")

TYPES = ("PER", "LOC", "ORG")


def _random_tags(rng, length, prefixes):
    choices = ["O"] + [f"{prefix}-{kind}" for prefix in prefixes for kind in TYPES]
    # Extra weight on "O" so that entities have room to start after it (I- after O included).
    return [rng.choice(choices + ["O"] * 3) for _ in range(length)]


def _perturbed(rng, tags, prefixes, rate=0.3):
    """A prediction close to `tags`, so that some entities match and some do not."""
    return [
        _random_tags(rng, 1, prefixes)[0] if rng.random() < rate else tag for tag in tags
    ]


def _random_batch(rng, num_sequences, prefixes="BI"):
    true = [_random_tags(rng, rng.randint(0, 15), prefixes) for _ in range(num_sequences)]
    pred = [_perturbed(rng, tags, prefixes) for tags in true]
    return true, pred


def _assert_equals_seqeval(true, pred):
    ours = entity_scores(true, pred)
    for key, seqeval_score in [
        ("precision", seqeval_metrics.precision_score),
        ("recall", seqeval_metrics.recall_score),
        ("f1", seqeval_metrics.f1_score),
    ]:
        assert ours[key] == pytest.approx(seqeval_score(true, pred), abs=1e-12)
    report = seqeval_metrics.classification_report(true, pred, output_dict=True)
    per_type_report = {k: v for k, v in report.items() if not k.endswith(" avg")}
    assert list(ours["per_type"]) == list(per_type_report)
    for entity_type, expected in per_type_report.items():
        got = ours["per_type"][entity_type]
        for ours_key, seqeval_key in [
            ("precision", "precision"),
            ("recall", "recall"),
            ("f1", "f1-score"),
        ]:
            assert got[ours_key] == pytest.approx(expected[seqeval_key], abs=1e-12)
        assert got["support"] == expected["support"]
    assert ours["support"] == report["micro avg"]["support"]
    if sum(map(len, true)):
        assert ours["token_accuracy"] == pytest.approx(seqeval_metrics.accuracy_score(true, pred))


def test_equals_seqeval_on_random_bio_batches():
    rng = random.Random(0)
    for _ in range(400):  # about 1,800 sequences in batches of 1..8
        _assert_equals_seqeval(*_random_batch(rng, rng.randint(1, 8)))


def test_equals_seqeval_on_one_large_random_batch():
    _assert_equals_seqeval(*_random_batch(random.Random(1), 1000))


def test_equals_seqeval_on_random_bioes_tags():
    rng = random.Random(2)
    for _ in range(200):
        _assert_equals_seqeval(*_random_batch(rng, rng.randint(1, 6), prefixes="BIES"))


@pytest.mark.parametrize(
    "true, pred",
    [
        # I- after O starts an entity, so this is a match.
        ([["O", "B-PER", "I-PER"]], [["O", "I-PER", "I-PER"]]),
        # I-x after B-y: two entities, neither matching the gold PER span.
        ([["B-PER", "I-PER", "O"]], [["B-PER", "I-LOC", "O"]]),
        # A type seen only in the prediction gets support 0.
        ([["O", "O"]], [["B-ORG", "O"]]),
        # Entities do not run across sentence boundaries.
        ([["O", "B-PER"], ["I-PER", "O"]], [["O", "B-PER"], ["B-PER", "O"]]),
        ([["B-PER"]], [["O"]]),
    ],
)
def test_hand_written_cases_equal_seqeval(true, pred):
    _assert_equals_seqeval(true, pred)


def test_hand_written_values():
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG"]]
    pred = [["B-PER", "I-PER", "O", "I-LOC"], ["O", "I-PER"]]
    scores = entity_scores(true, pred)
    # Gold: PER(0-1), LOC(3), ORG(1'); predicted: PER(0-1), LOC(3), PER(1'): 2 of 3 right.
    assert scores["precision"] == scores["recall"] == pytest.approx(2 / 3)
    assert scores["per_type"]["PER"] == {"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "support": 1}
    assert scores["per_type"]["ORG"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    # Tags right on 4 of 6 words (I-LOC and I-PER are wrong tags even if LOC is a right entity).
    assert scores["token_accuracy"] == pytest.approx(4 / 6)


def test_no_entities_and_no_words_give_zeros():
    scores = entity_scores([["O"], []], [["O"], []])
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.0, 0.0, 0.0)
    assert scores["per_type"] == {} and scores["token_accuracy"] == 1.0
    assert entity_scores([], [])["token_accuracy"] == 0.0


def test_mismatched_shapes_raise():
    with pytest.raises(ValueError, match="2 true sequences but 1 predicted"):
        entity_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="sequence 1: 2 true tags but 1 predicted"):
        entity_scores([["O"], ["O", "O"]], [["O"], ["O"]])


def test_malformed_tag_raises():
    with pytest.raises(ValueError, match="'X-PER'"):
        entity_scores([["X-PER"]], [["O"]])
