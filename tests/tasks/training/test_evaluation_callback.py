import keras
import numpy as np

from nlpzoo.tasks.training.callbacks import BestModelCheckpoint
from nlpzoo.tasks.training.evaluation_callback import EvaluationCallback
from nlpzoo.tasks.registry import get_task
from nlpzoo.tasks.span_ner import task as span_ner_task
from nlpzoo.tasks.tagging import task as tagging_task


def _model():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_scores_reach_the_history_and_later_callbacks(tmp_path):
    model = _model()
    calls = []

    def evaluate(evaluated_model):
        calls.append(evaluated_model)
        return {"entity_f1": np.float32(0.25 * len(calls)), "entity_recall": 1}

    path = str(tmp_path / "best.keras")
    history = model.fit(
        np.zeros((4, 2)), np.zeros((4, 1)), epochs=3, verbose=0,
        callbacks=[EvaluationCallback(evaluate), BestModelCheckpoint(path, "val_entity_f1")],
    )
    assert calls == [model] * 3
    assert history.history["val_entity_f1"] == [0.25, 0.5, 0.75]
    assert history.history["val_entity_recall"] == [1.0] * 3
    assert all(type(value) is float for value in history.history["val_entity_f1"])
    with open(path + ".json") as file:
        assert '"epoch": 3' in file.read()


def test_without_logs_nothing_is_evaluated():
    callback = EvaluationCallback(lambda model: 1 / 0)
    callback.on_epoch_end(0, None)


def test_task_callbacks_log_their_three_scores(monkeypatch):
    scores = {"entity_precision": 0.5, "entity_recall": 0.25, "entity_f1": 1 / 3,
              "token_accuracy": 0.9, "sentences": 2, "PER_f1": 0.1}
    received = []

    def evaluate_tagger(model, dataset, sentences, label_names):
        received.append((model, dataset, sentences, label_names))
        return scores

    monkeypatch.setattr(tagging_task, "evaluate_tagger", evaluate_tagger)
    [callback] = get_task("tagging").callbacks("data", ["s"], ["O"])
    callback.set_model(model := _model())
    logs = {"loss": 1.0}
    callback.on_epoch_end(0, logs)
    assert received == [(model, "data", ["s"], ["O"])]
    assert logs == {"loss": 1.0, "val_entity_precision": 0.5, "val_entity_recall": 0.25,
                    "val_entity_f1": 1 / 3}

    def evaluate_span_model(model, *args, **options):
        received.append((args, options))
        return {"span_precision": 0.5, "span_recall": 0.25, "span_f1": 0.75, "threshold": 0.4}

    monkeypatch.setattr(span_ner_task, "evaluate_span_model", evaluate_span_model)
    task = get_task("span_ner", max_span_width=4, threshold=0.4, decoding="nested")
    [callback] = task.callbacks("data", ["s"], ["NONE"])
    callback.set_model(model)
    logs = {}
    callback.on_epoch_end(0, logs)
    assert received[-1] == (("data", ["s"], ["NONE"]), dict(
        max_span_width=4, threshold=0.4, decoding="nested", method="greedy",
        tune_threshold=False))
    assert logs == {"val_span_precision": 0.5, "val_span_recall": 0.25, "val_span_f1": 0.75,
                    "val_threshold": 0.4}


def test_classification_needs_no_callback():
    assert get_task("classification").callbacks("data", [], ["a", "b"]) == []
