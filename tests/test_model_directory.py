import os

import pytest

from tools import model_directory as md
from tools.errors import UserError


def test_new_and_empty_directories_start_fresh(tmp_path):
    assert md.prepare(str(tmp_path / "new")) is False
    assert md.prepare(str(tmp_path / "new")) is False  # exists but empty


def test_foreign_directory_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="holds no config.json: refusing"):
        md.prepare(str(tmp_path))
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_interrupted_run_resumes_and_finished_run_needs_overwrite(tmp_path):
    md.write_json({"preset": "a"}, str(tmp_path / "config.json"))
    (tmp_path / "checkpoints").mkdir()
    assert md.prepare(str(tmp_path)) is True
    md.check_resumable(str(tmp_path), {"preset": "a"}, ["preset"])
    with pytest.raises(UserError, match="other settings \\(preset: 'a' → 'b'\\)"):
        md.check_resumable(str(tmp_path), {"preset": "b"}, ["preset"])
    os.rmdir(tmp_path / "checkpoints")
    (tmp_path / "best_model.keras").write_text("x")
    (tmp_path / "user_file.txt").write_text("kept")
    with pytest.raises(UserError, match="already holds a trained model"):
        md.prepare(str(tmp_path))
    assert md.prepare(str(tmp_path), overwrite=True) is False
    assert sorted(os.listdir(tmp_path)) == ["user_file.txt"]
