"""The question-answering model: it trains (XLA, mixed precision, .keras round trip), learns
a span task, reads raw (question, context) pairs, and its serving graph answers as
`tools/predict.py`'s Python decoding does."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.question_answering.readers import Answer, QAExample
from nlpzoo.tasks.registry import get_task
from nlpzoo.zoo import build_task_model, load_tokenizer
from tests.helpers.paths import ROOT
from tests.helpers.task_checks import run_task_test

WORDS = ("the team city river won lost near beside who where what is did "
         "paris berlin denver café tokyo 東 京 😀 broncos panthers rhine seine").split()
VOCABULARY = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "?", "cafe"] + WORDS
              + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"])


def _examples(count, seed=0):
    """'<team> won near <city> .' style contexts; the question asks for the city."""
    rng = np.random.default_rng(seed)
    teams, cities = ["broncos", "panthers"], ["paris", "berlin", "denver", "tokyo", "café"]
    examples = []
    for _ in range(count):
        filler = " ".join(rng.choice(["the", "river", "rhine", "seine"], rng.integers(0, 6)))
        city = str(rng.choice(cities))
        context = f"{filler} the {rng.choice(teams)} won near {city} . {filler}".strip()
        start = context.index(f"near {city}") + 5
        examples.append(QAExample("where did the team win ?", context, (Answer(city, start),)))
    return examples


def _model(task, **overrides):
    return build_task_model(task, "bert_tiny", vocabulary=VOCABULARY, max_seq_length=32,
                            num_layers=1, dropout=0.0, **overrides)


def test_the_model_trains_compiles_round_trips_and_keeps_float32_logits():
    task = get_task("question_answering")
    preprocessor = task.make_preprocessor(VOCABULARY, max_seq_length=32)
    dataset = task.make_dataset(_examples(32), preprocessor, [], batch_size=32)
    features, labels = next(iter(dataset))
    run_task_test(lambda jit_compile: _model(task, learning_rate=3e-3, jit_compile=jit_compile),
                  {name: value.numpy() for name, value in features.items()}, labels.numpy(),
                  expected_output_shape=(32, 2, features["token_ids"].shape[1]))


def test_it_learns_to_find_the_answer_and_predicts_raw_pairs():
    keras.utils.set_random_seed(0)
    task = get_task("question_answering")
    model = _model(task, learning_rate=3e-3)
    preprocessor = task.make_preprocessor(VOCABULARY, max_seq_length=32)
    train = task.make_dataset(_examples(256), preprocessor, [], batch_size=32, training=True,
                              seed=1)
    model.fit(train, epochs=6, verbose=0)
    held_out = _examples(40, seed=9)
    windows = task.prediction_examples(held_out, preprocessor)
    dataset = task.make_dataset(windows, preprocessor, [], batch_size=8)
    scores = task.evaluate(model, dataset, windows, [])
    assert scores["examples"] == 40 and scores["exact_match"] >= 90, scores
    # What TensorBoard shows each epoch: question → gold / predicted, for the first ones.
    shown = task.describe_predictions(model, dataset, windows, [], count=3)
    assert len(shown) == 3 and shown[0].startswith("where did the team win ? → gold **")
    assert sum(line.endswith("✓") for line in shown) >= 2
    # Raw (question, context) pairs in, answers with character offsets out.
    records = model.predict([(e.question, e.context) for e in held_out[:5]])
    for record, example in zip(records, held_out):
        assert record["answer"] == example.context[record["start_char"]:record["end_char"]]
        assert 0 < record["score"] <= 1 and len(record["n_best"]) >= 1
    assert sum(r["answer"] == e.answers[0].text for r, e in zip(records, held_out)) >= 4
    # fit on raw pairs and answer texts.
    model.fit([(e.question, e.context) for e in held_out], [e.answers[0].text for e in held_out],
              epochs=1, verbose=0)
    with pytest.raises(ValueError, match=r"x\[0\]: a question-answering model reads"):
        model.predict(["just a string"])


# Other families' tokenizers (tests/fixtures/tokenizers/): their templates and pieces.
FAMILY_TOKENIZERS = {"roberta_tiny": "roberta_bpe/tokenizer_json",
                     "albert_tiny": "albert_spm/legacy"}


@pytest.mark.parametrize("allow_no_answer, encoder", [
    (False, "bert_tiny"), (True, "bert_tiny"), (False, "roberta_tiny"),
    pytest.param(True, "albert_tiny", marks=pytest.mark.slow)])
def test_the_serving_graph_answers_as_python_decoding_does(allow_no_answer, encoder):
    """Also for byte-level BPE (`<s> q </s></s> c </s>`) and SentencePiece (ALBERT)."""
    keras.utils.set_random_seed(3)
    # n_best_size above any window's length: the Python decoding looks at every pair, as the
    # graph does.
    # (Their questions run to more pieces than words: cut to 16, leaving room for context.)
    task = get_task("question_answering", doc_stride=5, n_best_size=64, max_answer_length=4,
                    allow_no_answer=allow_no_answer, no_answer_threshold=-0.5,
                    max_query_length=64 if encoder == "bert_tiny" else 16)
    if encoder == "bert_tiny":
        model = _model(task)
        preprocessor = task.make_preprocessor(VOCABULARY, max_seq_length=32)
    else:
        tokenizer = load_tokenizer(os.path.join(ROOT, "tests", "fixtures", "tokenizers",
                                                FAMILY_TOKENIZERS[encoder]))
        model = build_task_model(task, encoder, tokenizer=tokenizer, max_seq_length=32,
                                 num_layers=1, dropout=0.0)
        preprocessor = task.make_preprocessor(tokenizer, max_seq_length=32)
    rng = np.random.default_rng(5)
    examples = []
    for index in range(24):
        words = rng.choice(WORDS + [".", ",", "Café", "Broncos"], rng.integers(1, 40))
        spacing = rng.choice(["", " ", "  "], len(words))
        context = "".join(f"{w}{s or ' '}" for w, s in zip(words, spacing)).strip()
        question = " ".join(rng.choice(WORDS, rng.integers(1, 30)))
        examples.append(QAExample(question, context))
    examples.append(QAExample("who ?", "\u200b"))  # no word at all
    decoded = task.predict_outputs(model, preprocessor, examples, [], batch_size=7)
    outputs = task.serving_outputs(model, preprocessor, [],
                                   tf.constant([e.question for e in examples]),
                                   tf.constant([e.context for e in examples]))
    outputs = {name: value.numpy() for name, value in outputs.items()}
    assert [d.answer for d in decoded] == [a.decode() for a in outputs["answer"]]
    assert [d.start_char for d in decoded] == outputs["start_char"].tolist()
    assert [d.end_char for d in decoded] == outputs["end_char"].tolist()
    np.testing.assert_allclose([d.probability for d in decoded], outputs["score"], rtol=1e-4,
                               atol=1e-6)
    assert decoded[-1].answer == "" and outputs["start_char"][-1] == -1
    # Long contexts were read in several windows.
    windows = task.prediction_examples(examples, preprocessor)
    assert len(windows) > len(examples) + 10


def test_a_task_preset_builds_the_model():
    from nlpzoo.zoo import build_model

    model = build_model("bert_tiny_question_answerer", vocabulary=VOCABULARY)
    assert model.output_shape == (None, 2, None) and model.task.name == "question_answering"
    assert model.predict([("who won ?", "the broncos won")])[0]["answer"] in (
        "the", "broncos", "won", "the broncos", "broncos won", "the broncos won")


def test_an_ensemble_averages_start_and_end_probabilities():
    task = get_task("question_answering")
    members = [_model(task) for _ in range(2)]
    ensemble = task.ensemble(members)
    preprocessor = task.make_preprocessor(VOCABULARY, max_seq_length=32)
    examples = _examples(6)
    features, _ = next(iter(task.make_dataset(examples, preprocessor, [])))
    mean = np.mean([keras.ops.convert_to_numpy(keras.ops.softmax(m(features), axis=-1))
                    for m in members], axis=0)
    combined = keras.ops.convert_to_numpy(keras.ops.softmax(ensemble(features), axis=-1))
    np.testing.assert_allclose(combined, mean, atol=1e-6)
    decoded = task.predict_outputs(ensemble, preprocessor, examples, [])
    assert all(d.answer == e.context[d.start_char:d.end_char] for d, e in zip(decoded, examples))
