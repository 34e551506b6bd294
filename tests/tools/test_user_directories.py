"""No binary writes into, replaces or deletes a directory of the user's, whatever the flags.

Every binary that writes a run or an export is pointed at a folder of the user's own (a
Hugging Face checkpoint beside notes and logs, the situation of the report that found
`--overwrite` deleting such files) and at the working directory, with `--overwrite`: each
must refuse in one line naming the path, exit 1, and leave every file byte-identical.
"""

import hashlib
import os
import subprocess
import sys

from nlpzoo.tasks.io.ownership import MARKER
from tests.helpers.binaries import run_tools, tool_path
from tests.helpers.paths import ROOT, TREC

USER_FILES = {
    "config.json": '{"model_type": "bert", "vocab_size": 30522}\n',
    "vocab.txt": "[PAD]\n[UNK]\nhello\n",
    "README.md": "# my model\n",
    "logs/run1.txt": "epoch 1 loss 0.3\n",
    "main.c": "int main(void) { return 0; }\n",
}


def _user_folder(path):
    for name, text in USER_FILES.items():
        os.makedirs(os.path.dirname(os.path.join(path, name)), exist_ok=True)
        with open(os.path.join(path, name), "w") as f:
            f.write(text)
    os.makedirs(os.path.join(path, ".git"))
    with open(os.path.join(path, ".git", "HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
    return str(path)


def _snapshot(path):
    """{relative path: SHA-256} of every file under `path` (and every folder, as None)."""
    found = {}
    for parent, folders, files in os.walk(path):
        for name in folders:
            found[os.path.relpath(os.path.join(parent, name), path)] = None
        for name in files:
            with open(os.path.join(parent, name), "rb") as f:
                found[os.path.relpath(os.path.join(parent, name), path)] = \
                    hashlib.sha256(f.read()).hexdigest()
    return found


def _commands(output, trained_classifier_dir, tmp_path):
    """{binary: (tool, *flags)} writing `output` with --overwrite."""
    tasks = tmp_path / "tasks.txt"
    tasks.write_text(f"trec --task=classification --train_data={TREC}/train.label "
                     f"--eval_data={TREC}/dev.label\n")
    small = ("--epochs=1", "--vocab_size=300", "--max_seq_length=32", "--overwrite")
    trec = ("--train_data", os.path.join(TREC, "train.label"),
            "--eval_data", os.path.join(TREC, "dev.label"))
    return {
        "train": ("train.py", *trec, f"--model_dir={output}", *small),
        "pretrain": ("pretrain.py", f"--corpus={os.path.join(TREC, 'train.label')}",
                     "--preset=bert_tiny", "--max_steps=2", "--vocab_size=300",
                     f"--model_dir={output}", "--overwrite"),
        "distill": ("distill.py", f"--teacher={trained_classifier_dir}", *trec,
                    f"--model_dir={output}", *small),
        "multitask": ("multitask.py", f"--tasks={tasks}", f"--model_dir={output}", *small),
        "convert": ("convert.py", f"--input={trained_classifier_dir}",
                    "--output_format=huggingface", f"--output={output}", "--overwrite"),
        "export": ("export.py", f"--model_dir={trained_classifier_dir}", f"--output={output}",
                   "--overwrite"),
    }


def test_no_binary_replaces_a_folder_of_the_users(trained_classifier_dir, tmp_path):
    folder = _user_folder(tmp_path / "my_model")
    before = _snapshot(folder)
    commands = _commands(folder, trained_classifier_dir, tmp_path)
    commands["build_vocab"] = ("build_vocab.py", f"--corpus={os.path.join(TREC, 'train.label')}",
                               f"--output={os.path.join(folder, 'main.c')}", "--overwrite")
    commands["build_vocab into a folder"] = (
        "build_vocab.py", f"--corpus={os.path.join(TREC, 'train.label')}",
        f"--output={folder}", "--overwrite")
    results = run_tools(commands)
    for name, result in results.items():
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert result.returncode == 1, (name, result.stderr[-2000:])
        assert len(errors) == 1 and folder in errors[0], (name, result.stderr[-2000:])
        assert "Traceback" not in result.stderr, name
    assert _snapshot(folder) == before


def test_no_binary_writes_into_the_working_directory_or_its_parent(trained_classifier_dir,
                                                                     tmp_path):
    home = tmp_path / "home"
    folder = _user_folder(home / "my_project")
    before = _snapshot(home)
    processes = {}
    for target in (".", ".."):
        commands = _commands(target, trained_classifier_dir, tmp_path)
        if target == "..":  # the same check as "." (tasks.io.ownership): two binaries suffice
            commands = {name: commands[name] for name in ("train", "convert")}
        for name, (tool, *flags) in commands.items():
            process = subprocess.Popen(
                [sys.executable, tool_path(tool), *flags], cwd=folder,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT))
            processes[f"{name} {target}"] = process
    for name, process in processes.items():
        _, stderr = process.communicate(timeout=600)
        assert process.returncode == 1, (name, stderr[-2000:])
        assert "working directory" in stderr and "Traceback" not in stderr, (name, stderr)
    assert _snapshot(home) == before


def test_overwrite_replaces_our_own_run_and_export(trained_classifier_dir, tmp_path):
    """The other side: what we wrote, --overwrite does replace (convert twice)."""
    output = str(tmp_path / "hf")
    command = ("convert.py", f"--input={trained_classifier_dir}", "--output_format=huggingface",
               f"--output={output}")
    first = run_tools({"first": command})["first"]
    assert first.returncode == 0, first.stderr[-2000:]
    assert os.path.exists(os.path.join(output, MARKER))
    again = run_tools({"refused": command})["refused"]
    assert again.returncode == 1 and "already exists; pass --overwrite" in again.stderr
    replaced = run_tools({"replaced": (*command, "--overwrite")})["replaced"]
    assert replaced.returncode == 0, replaced.stderr[-2000:]
