"""Multi-task fine-tuning: the sampling of tasks, the shared-encoder step, the --tasks file and
tools/multitask.py end to end."""

import json
import os
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from nlpzoo.tasks.registry import get_task
from nlpzoo.tasks.training.shared_encoder_training import shared_optimizer, train_step
from nlpzoo.tasks.training.task_sampling import draw_tasks, sampling_probabilities
from tests.helpers.binaries import json_line, run_tools
from tests.helpers.paths import ROOT, TREC
from tests.tasks.training.test_tensorboard import _events
from nlpzoo.zoo import build_task_model

CONLL = os.path.join(ROOT, "samples", "conll2003")


@pytest.mark.parametrize("sizes, weights, temperature, expected", [
    ([300, 100, 50], None, 1.0, [300 / 450, 100 / 450, 50 / 450]),
    ([300, 100, 50], [1, 1, 4], 1.0, [300 / 600, 100 / 600, 200 / 600]),
    ([400, 100], None, 2.0, [20 / 30, 10 / 30]),
    ([400, 100], None, 1e6, [0.5, 0.5]),
])
def test_each_task_is_drawn_in_its_configured_share(sizes, weights, temperature, expected):
    probabilities = sampling_probabilities(sizes, weights, temperature)
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)
    for seed in range(5):
        draws = draw_tasks(probabilities, 1000, seed=seed, epoch=3)
        shares = np.bincount(draws, minlength=len(sizes)) / 1000
        assert np.abs(shares - expected).max() <= 0.02, (seed, shares)
    assert not (draw_tasks(probabilities, 50, seed=0, epoch=0)
                == draw_tasks(probabilities, 50, seed=0, epoch=1)).all()
    with pytest.raises(ValueError, match="not all 0"):
        sampling_probabilities([10, 20], [0, 0])


def _pair_on_one_encoder():
    keras.utils.set_random_seed(5)
    classifier = build_task_model(get_task("classification"), "bert_tiny", num_classes=2,
                                  vocabulary_size=40, total_steps=10, learning_rate=1e-2)
    tagger = build_task_model(get_task("tagging"), "bert_tiny", encoder=classifier.encoder,
                              labels=["O", "B-X", "I-X"], head="softmax", total_steps=10,
                              learning_rate=1e-2)
    return classifier, tagger


def test_a_step_moves_the_encoder_and_its_own_head_only():
    classifier, tagger = _pair_on_one_encoder()
    assert tagger.encoder is classifier.encoder
    optimizer = shared_optimizer([classifier, tagger])
    ids = np.array([[2, 7, 9, 11, 3], [2, 12, 13, 3, 0]], "int32")
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
         "padding_mask": (ids != 0).astype("int32")}

    def head(model):
        return [np.array(v) for v in model.trainable_variables
                if not v.path.startswith("transformer/")]

    encoder_before = [np.array(v) for v in classifier.encoder.trainable_variables]
    classifier_head, tagger_head = head(classifier), head(tagger)
    loss = keras.metrics.Mean()
    tf.function(train_step(classifier, optimizer, loss))((x, np.array([0, 1])))
    assert int(optimizer.iterations.numpy()) == 1 and float(loss.result()) > 0
    changed = [not np.array_equal(a, np.array(b)) for a, b in
               zip(encoder_before, classifier.encoder.trainable_variables)]
    assert sum(changed) > len(changed) // 2
    assert all(not np.array_equal(a, b) for a, b in zip(classifier_head, head(classifier)))
    assert all(np.array_equal(a, b) for a, b in zip(tagger_head, head(tagger)))
    # The classifier's own compiled optimizer was never used: it saves no state.
    assert not classifier.optimizer.built and optimizer is not classifier.optimizer



def test_a_tagger_step_leaves_the_pooler_alone_without_a_warning():
    """The tagger's loss does not reach the encoder's pooler (the classifier's input): the
    step skips it, where Keras would warn at every trace, and it stays exactly as it was."""
    classifier, tagger = _pair_on_one_encoder()
    optimizer = shared_optimizer([classifier, tagger])
    ids = np.array([[2, 7, 9, 11, 3], [2, 12, 13, 3, 0]], "int32")
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
         "padding_mask": (ids != 0).astype("int32"),
         "word_starts": np.array([[1, 2, 3], [1, 2, 0]], "int32"),
         "word_mask": np.array([[1, 1, 1], [1, 1, 0]], "int32")}
    y = np.array([[1, 2, 0], [0, 1, -1]], "int32")
    pooler = [v for v in classifier.encoder.trainable_variables if "pooler" in v.path]
    assert pooler
    before = [np.array(v) for v in pooler]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Keras's "Gradients do not exist for variables"
        tf.function(train_step(tagger, optimizer, keras.metrics.Mean()))((x, y))
    assert int(optimizer.iterations.numpy()) == 1
    for value, variable in zip(before, pooler):
        np.testing.assert_array_equal(value, np.array(variable), err_msg=variable.path)

def _tasks_file(tmp_path, text):
    path = tmp_path / "tasks.txt"
    path.write_text(text)
    return str(path)


TWO_ENTRIES = (f"# the bundled samples\n"
               f"trec --task=classification --train_data={TREC}/train.label "
               f"--eval_data={TREC}/dev.label\n\n"
               f"conll --task=tagging --head=softmax --train_data={CONLL}/train.txt "
               f"--eval_data={CONLL}/dev.txt --weight=2  # twice as often\n")


@pytest.mark.slow  # whole runs of the binary are in tests/test_multitask_outputs.py too (slow)
def test_multitask_binary_end_to_end(tmp_path):
    tasks = _tasks_file(tmp_path, TWO_ENTRIES)
    model_dir = str(tmp_path / "run")
    common = ["--epochs=2", "--batch_size=16", "--vocab_size=300", "--max_seq_length=32",
              "--learning_rate=1e-3"]
    result = run_tools({"run": ("multitask.py", f"--tasks={tasks}", f"--model_dir={model_dir}",
                                *common, "--target=trec")})["run"]
    assert result.returncode == 0, result.stderr[-3000:]

    config = json.load(open(os.path.join(model_dir, "config.json")))
    assert config["entries"]["conll"]["weight"] == 2.0 and config["target"] == "trec"
    batches = {name: entry["batches_per_pass"] for name, entry in config["entries"].items()}
    probability = 2 * batches["conll"] / (2 * batches["conll"] + batches["trec"])
    assert config["entries"]["conll"]["probability"] == pytest.approx(probability)
    # The last epoch trains trec alone: TensorBoard counts the batches of each entry.
    logs = os.path.join(model_dir, "logs")
    conll, trec = _events(os.path.join(logs, "conll", "train")), _events(
        os.path.join(logs, "trec", "train"))
    assert conll["epoch_batches"][1] == 0 and conll["epoch_batches"][0] > 0
    assert trec["epoch_batches"][1] == batches["trec"] or trec["epoch_batches"][1] > 0
    assert sorted(trec["epoch_loss"]) == [0, 1] and "epoch_loss" in conll
    validation = _events(os.path.join(logs, "conll", "validation"))
    assert sorted(validation["epoch_entity_f1"]) == [0, 1]

    # Each entry is a model directory the other binaries take as it is; the final
    # metrics printed are evaluate.py's on the validation data.
    evaluation = run_tools({"evaluate": ("evaluate.py", f"--model_dir={model_dir}/conll",
                                         f"--data={CONLL}/dev.txt")})["evaluate"]
    assert evaluation.returncode == 0, evaluation.stderr[-2000:]
    final = json_line(result.stdout)
    for metric, value in json_line(evaluation.stdout).items():
        assert final["conll"][metric] == pytest.approx(value, abs=1e-5), metric
    assert set(final) == {"trec", "conll"} and "accuracy" in final["trec"]
    # The shared encoder after the last epoch is a checkpoint tools/train.py starts from.
    trec_best = json.load(open(os.path.join(model_dir, "trec", "best_model.keras.json")))
    assert 1 <= trec_best["epoch"] <= 2
    assert os.path.exists(os.path.join(model_dir, "encoder", "encoder.keras"))


def test_tasks_file_errors_name_the_file_and_line(tmp_path):
    cases = {
        "unknown flag": ("trec --task=classification --nope=1", ":1: "),
        "missing data": (f"trec --task=classification --train_data={TREC}/nothing "
                         f"--eval_data={TREC}/dev.label", ":1: --train_data="),
        "flag first": ("--task=classification", ":1: a line starts with the entry's name"),
        "twice": (TWO_ENTRIES + TWO_ENTRIES.splitlines()[1], ":5: entry 'trec' appears twice"),
    }
    commands = {}
    for name, (text, _) in cases.items():
        folder = tmp_path / name.replace(" ", "_")
        folder.mkdir()
        commands[name] = ("multitask.py", f"--tasks={_tasks_file(folder, text + chr(10))}",
                          f"--model_dir={folder / 'run'}")
    for name, result in run_tools(commands).items():
        assert result.returncode != 0, name
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("error: ") and cases[name][1] in last, (name, last)
        assert not os.path.exists(tmp_path / name.replace(" ", "_") / "run")
