import os

import pytest

import nlpzoo
from nlpzoo.tasks.io.ownership import MARKER, write_marker
from nlpzoo.zoo.runs import directory as md
from nlpzoo.tools.cli.errors import UserError


def _our_run(directory, config=None):
    """A run directory of ours holding `config` as config.json (what a killed run leaves)."""
    os.makedirs(directory, exist_ok=True)
    write_marker(str(directory), "test")
    md.write_json(config or {"preset": "a"}, str(os.path.join(directory, "config.json")))


def test_new_and_empty_directories_start_fresh(tmp_path):
    assert md.prepare(str(tmp_path / "new")) is False
    assert md.prepare(str(tmp_path / "new")) is False  # exists but empty


def test_foreign_directory_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not written by nlpzoo .*notes.txt.*: refusing"):
        md.prepare(str(tmp_path))
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_interrupted_run_resumes_and_finished_run_needs_overwrite(tmp_path):
    _our_run(tmp_path)
    (tmp_path / "checkpoints").mkdir()
    assert md.inspect(str(tmp_path)) == "resume"
    assert md.prepare(str(tmp_path)) is True
    md.check_resumable(str(tmp_path), {"preset": "a"}, ["preset"])
    with pytest.raises(UserError, match="other settings \\(preset: 'a' → 'b'\\)"):
        md.check_resumable(str(tmp_path), {"preset": "b"}, ["preset"])
    # A key its config.json lacks (recorded since) is read as its default.
    md.check_resumable(str(tmp_path), {"preset": "a", "new": 1}, ["preset", "new"], {"new": 1})
    with pytest.raises(UserError, match="new: 1 → 2"):
        md.check_resumable(str(tmp_path), {"preset": "a", "new": 2}, ["preset", "new"],
                           {"new": 1})
    # Killed during the final evaluation: checkpoints gone, no metrics.json yet.
    os.rmdir(tmp_path / "checkpoints")
    (tmp_path / "best_model.keras").write_text("x")
    assert md.prepare(str(tmp_path)) is True
    # Only the final metrics.json makes a run finished.
    md.write_json({"accuracy": 0.5}, str(tmp_path / "metrics.json"))
    with pytest.raises(UserError, match="already holds a trained model"):
        md.prepare(str(tmp_path))
    assert md.inspect(str(tmp_path), overwrite=True) == "overwrite"
    before = sorted(os.listdir(tmp_path))
    assert md.inspect(str(tmp_path), overwrite=True) == "overwrite"
    assert sorted(os.listdir(tmp_path)) == before  # inspect changes nothing
    assert md.prepare(str(tmp_path), overwrite=True) is False
    assert sorted(os.listdir(tmp_path)) == [MARKER, ".nlpzoo.lock"]


def test_overwrite_refuses_a_run_directory_holding_a_users_file(tmp_path):
    _our_run(tmp_path)
    md.write_json({"accuracy": 0.5}, str(tmp_path / "metrics.json"))
    (tmp_path / "user_file.txt").write_text("kept")
    with pytest.raises(UserError, match="files nlpzoo did not write \\(user_file.txt\\)"):
        md.prepare(str(tmp_path), overwrite=True)
    assert (tmp_path / "user_file.txt").read_text() == "kept"
    assert (tmp_path / "metrics.json").exists()


def test_run_killed_in_its_first_epoch_resumes(tmp_path):
    # config.json is written before the first epoch; nothing else yet.
    _our_run(tmp_path)
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    assert md.prepare(str(tmp_path)) is True


def test_load_trained_refuses_what_is_not_a_trained_run_in_library_words(tmp_path):
    unfinished = tmp_path / "unfinished"
    _our_run(unfinished)
    broken = tmp_path / "broken.keras"
    broken.write_text("not a zip")
    cases = [
        ({"model_dir": str(tmp_path / "nowhere")}, f"{tmp_path / 'nowhere'}: no such directory"),
        ({"model_dir": str(unfinished)},
         f"{unfinished}: not a trained run: no best_model.keras (was training finished?)"),
        ({"model_path": str(tmp_path / "none.keras")}, f"{tmp_path / 'none.keras'}: no such file"),
        ({"model_path": str(broken)}, f"{broken}: cannot load {broken}: "),
    ]
    for arguments, message in cases:
        with pytest.raises(nlpzoo.RunDirectoryError) as error:
            nlpzoo.load_trained(**arguments)
        assert isinstance(error.value, ValueError) and str(error.value).startswith(message)
        assert error.value.path == next(iter(arguments.values()))
        assert "--" not in str(error.value)  # the binaries add their flags' names themselves
    with pytest.raises(ValueError, match="exactly one of model_dir and model_path"):
        nlpzoo.load_trained()


def test_load_trained_returns_the_model_and_what_runs_it(trained_classifier_dir):
    trained = nlpzoo.load_trained(trained_classifier_dir)
    assert trained._fields == ("model", "task", "preprocessor", "labels", "config")
    assert trained.task.name == "classification" and trained.config["task"] == "classification"
    assert trained.labels == md.read_json(md.path(trained_classifier_dir, md.LABELS))
    assert trained.model.output_shape == (None, len(trained.labels))
    assert trained.preprocessor.max_seq_length == trained.config["max_seq_length"]
    alone = nlpzoo.load_trained(model_path=md.path(trained_classifier_dir, md.BEST_MODEL))
    assert alone.labels == trained.labels and alone.task.name == trained.task.name
