"""Installed as `nlpzoo`: every package is in the distribution, and a user's own `tasks`,
`tools`, `layers` or `zoo` in the working directory cannot shadow ours."""

import configparser
import os
import subprocess
import sys

from tests.helpers.paths import ROOT

SOURCE_FOLDERS = ("layers", "tasks", "zoo", "tools")


def _listed_packages():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    return set(config["options"]["packages"].split())


def test_setup_cfg_lists_every_package_under_its_installed_name():
    found = {"nlpzoo"}
    for folder in SOURCE_FOLDERS:
        for directory, subdirectories, files in os.walk(os.path.join(ROOT, folder)):
            subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
            if "__init__.py" in files:
                found.add("nlpzoo." + os.path.relpath(directory, ROOT).replace(os.sep, "."))
    assert _listed_packages() == found


def test_a_users_own_tasks_and_tools_do_not_clash(tmp_path):
    for name in ("tasks.py", "layers.py", "zoo.py"):
        (tmp_path / name).write_text(f"raise RuntimeError('the user\\'s {name} was imported')\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "__init__.py").write_text("raise RuntimeError('the user tools')\n")
    code = ("import nlpzoo, nlpzoo.tools.train\n"
            "model = nlpzoo.build_model('bert_tiny_classifier', num_classes=3, vocabulary_size=100)\n"
            "print(model.output_shape)\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                            text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("(None, 3)")
