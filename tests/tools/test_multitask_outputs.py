"""What a tools/multitask.py run leaves behind: one encoder under every head, and a run
directory that tools/evaluate.py and tools/train.py --init_checkpoint take as they are."""

import json
import os

import keras
import numpy as np
import pytest

import nlpzoo.zoo  # noqa: F401  (registers our layers for loading)
from nlpzoo.layers import transformer_of
from tests.helpers.binaries import json_line, run_tools
from tests.helpers.paths import CONLL, TREC

ENTRIES = (f"trec --task=classification --train_data={TREC}/train.label "
           f"--eval_data={TREC}/dev.label\n"
           f"conll --task=tagging --head=crf --train_data={CONLL}/train.txt "
           f"--eval_data={CONLL}/dev.txt\n"
           f"spans --task=span_ner --max_span_width=3 --flat_method=exact "
           f"--train_data={CONLL}/train.txt --eval_data={CONLL}/dev.txt\n")
SMALL = ("--batch_size=16", "--max_seq_length=32", "--learning_rate=1e-3",
         "--mixed_precision=float32", "--noprogress")


def _transformer_weights(encoder):
    """{variable path: value} of an encoder's transformer (what every head shares)."""
    return {variable.path: np.array(variable) for variable in transformer_of(encoder).weights}


@pytest.fixture(scope="module")
def one_epoch_run(tmp_path_factory):
    """A one-epoch run of three entries on the bundled samples: (its directory, its stdout)."""
    folder = tmp_path_factory.mktemp("multitask")
    tasks = folder / "tasks.txt"
    tasks.write_text(ENTRIES)
    model_dir = str(folder / "run")
    result = run_tools({"run": ("multitask.py", f"--tasks={tasks}", f"--model_dir={model_dir}",
                                "--epochs=1", "--vocab_size=300",
                                *[flag for flag in SMALL if flag != "--noprogress"])})["run"]
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir, result.stdout


@pytest.mark.slow
def test_both_heads_sit_on_the_same_encoder_weights(one_epoch_run):
    model_dir, _ = one_epoch_run
    # One epoch: both best models are that epoch's, so they hold the encoder as it ended,
    # which is also what encoder/ holds.
    trec = keras.saving.load_model(os.path.join(model_dir, "trec", "best_model.keras"))
    conll = keras.saving.load_model(os.path.join(model_dir, "conll", "best_model.keras"))
    shared = keras.saving.load_model(os.path.join(model_dir, "encoder", "encoder.keras"))
    weights = [_transformer_weights(model) for model in (trec.encoder, conll.encoder, shared)]
    assert weights[0].keys() == weights[1].keys() == weights[2].keys()
    for path, value in weights[0].items():
        np.testing.assert_array_equal(value, weights[1][path], err_msg=path)
        np.testing.assert_array_equal(value, weights[2][path], err_msg=path)
    # The heads are each task's own.
    assert trec.output_shape[-1] == 6 and "crf" in {layer.name for layer in conll.layers}
    # No --pack_length and XLA off (CPU): every head's shared encoder packs, as tools/train.py's.
    assert [transformer_of(model.encoder).pack_length for model in (trec, conll)] == [1, 1]
    with open(os.path.join(model_dir, "config.json")) as f:
        assert json.load(f)["pack_length"] == 1


@pytest.mark.slow
def test_span_ner_decoding_is_tuned_as_train_py_tunes_it(one_epoch_run):
    """The span entry's threshold is picked on its validation data after training, kept in
    its best model and config.json, and the printed final metrics are at that threshold."""
    model_dir, stdout = one_epoch_run
    entry = os.path.join(model_dir, "spans")
    config = json.load(open(os.path.join(entry, "config.json")))
    assert config["calibrated_on"] == os.path.abspath(os.path.join(CONLL, "dev.txt"))
    threshold = config["task_options"]["threshold"]
    model = keras.saving.load_model(os.path.join(entry, "best_model.keras"))
    assert model.task_metadata["task_options"]["threshold"] == threshold
    assert f'spans: decoding tuned on {CONLL}/dev.txt: {{"threshold": {threshold}}}' in stdout
    final = json_line(stdout)
    assert set(final) == {"trec", "conll", "spans"}
    assert final["spans"] == json.load(open(os.path.join(entry, "metrics.json")))


@pytest.mark.slow
def test_the_run_directory_serves_evaluate_and_train(one_epoch_run, tmp_path):
    model_dir, stdout = one_epoch_run
    fine_tuned = str(tmp_path / "trec_again")
    results = run_tools({
        "evaluate": ("evaluate.py", f"--model_dir={model_dir}/trec", f"--data={TREC}/dev.label"),
        "train": ("train.py", f"--init_checkpoint={model_dir}", f"--model_dir={fine_tuned}",
                  f"--train_data={TREC}/train.label", f"--eval_data={TREC}/dev.label",
                  "--epochs=1", *SMALL),
    })
    for name, result in results.items():
        assert result.returncode == 0, (name, result.stderr[-3000:])
    # evaluate.py on the entry's directory reproduces the run's own final metrics.
    evaluated = json_line(results["evaluate"].stdout)
    assert evaluated["accuracy"] == pytest.approx(json_line(stdout)["trec"]["accuracy"],
                                                  abs=1e-6)
    # tools/train.py takes the run directory for its encoder/, vocabulary included.
    config = json.load(open(os.path.join(fine_tuned, "config.json")))
    assert config["init_checkpoint"] == os.path.join(os.path.abspath(model_dir), "encoder")
    with open(os.path.join(model_dir, "encoder", "vocab.txt"), encoding="utf-8") as f:
        assert config["vocabulary_size"] == len(f.read().splitlines())


def test_an_entry_name_cannot_point_outside_its_run(tmp_path):
    """An entry's name is a directory of --model_dir, which the run clears: "..", ".",
    "config.json" or "encoder" would have it write over (or clear) something else."""
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / "config.json").write_text("{}")  # another model directory's file
    line = f"--task=classification --train_data={TREC}/train.label --eval_data={TREC}/dev.label"
    commands = {}
    for number, name in enumerate(["..", "config.json", "encoder"]):
        tasks = tmp_path / f"tasks{number}.txt"
        tasks.write_text(f"# one entry\n{name} {line}\n")
        commands[name] = ("multitask.py", f"--tasks={tasks}", f"--model_dir={parent / 'run'}")
    for name, result in run_tools(commands).items():
        assert result.returncode != 0, name
        last = result.stderr.strip().splitlines()[-1]
        assert f"tasks{list(commands).index(name)}.txt:2: a line starts with the entry's name" \
            in last, (name, last)
    assert os.listdir(parent) == ["config.json"]
