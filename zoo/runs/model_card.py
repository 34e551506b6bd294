"""Model cards: the `README.md` that says what a model directory or an export holds.

The card follows the Hugging Face model card layout: a YAML front matter
block written by `huggingface_hub.ModelCardData` (`base_model`, `datasets`,
`library_name`, `license`, `metrics`, `pipeline_tag`, `tags`) and then Markdown:
the task and head, the labels, the checkpoint training started from, the data
files (line counts and SHA-256 hashes), the resolved hyperparameters, the
validation and test metrics with their dates (UTC), the command that
reproduces the run, the library versions and the model's limits.

`card_markdown` turns a plain dict (the card's data) into the Markdown text
and nothing else; `training_card`, `pretraining_card` and `export_card`
collect that dict from a model directory; `write_model_card` writes it
atomically; `record_test_result` (tools/evaluate.py) replaces one entry of
the card's test section and leaves every other byte as it was.

A card is portable: it names files and checkpoints by their base names
(`train.txt`, `all-MiniLM-L6-v2`), never by an absolute path of the machine
that wrote it, so it reads the same on the Hugging Face Hub or another
machine; `base_model` is the checkpoint directory's name or `--base_model_id`.

Examples:
>>> text = card_markdown({"title": "TREC question classifier", "task": "classification",
...                       "labels": ["DESC", "HUM"], "preset": "bert_tiny",
...                       "command": "python tools/train.py --train_data=train.label"})
>>> text.splitlines()[:6]
['---', 'library_name: keras', 'tags:', '- nlp-transfer-zoo', '- classification', '- bert_tiny']
>>> "| Base checkpoint | random initialisation |" in text
True
>>> read_command(text)
'python tools/train.py --train_data=train.label'
"""

import datetime
import hashlib
import importlib.metadata
import json
import os
import re
import shlex
import sys

from nlpzoo.tasks.io.atomic_files import write_text_atomically
from nlpzoo.tasks.io.json_text import read_json_file
from nlpzoo.zoo.runs import directory as md

CARD = md.CARD
LIBRARY = "nlp-transfer-zoo"

_TEST_BEGIN = "<!-- test-results: begin -->"
_TEST_END = "<!-- test-results: end -->"
_TEST_ENTRY = "<!-- test: {} -->"
_NO_TESTS = ("_No test set evaluated yet: `tools/evaluate.py --model_dir=<this directory> "
             "--data=<test file> --update_card` records one here._")
_COMMAND_MARK = "<!-- command -->"
# Prefixes of tag schemes (BIO, BIOES, BILOU): "B-LOC" names the entity type "LOC".
_TAG_PREFIX = re.compile(r"^[BIESLU]-")
_SCORE_NAMES = ("precision", "recall", "f1", "support")
# The Hub's word for a pretraining run's model (a task says its own: `Task.pipeline_tag`).
_PRETRAINING_PIPELINE = "fill-mask"


# === Portable names ===

def portable_name(path):
    """What a card calls `path`: an absolute path becomes its last component.

    Examples:
    >>> portable_name("/home/me/checkpoints/all-MiniLM-L6-v2/"), portable_name("data/train.txt")
    ('all-MiniLM-L6-v2', 'data/train.txt')
    """
    path = str(path)
    return os.path.basename(os.path.normpath(path)) if os.path.isabs(path) else path


def portable_command(argv):
    """`command_line(argv)` with every absolute path (alone or as `--flag=path`) by its name.

    The binary keeps its folder (`tools/train.py`).

    Examples:
    >>> portable_command(["/src/zoo/tools/train.py", "--train_data=/data/trec/train.label",
    ...                   "--model_dir", "/runs/trec", "--epochs=3"])
    'python tools/train.py --train_data=train.label --model_dir trec --epochs=3'
    """
    argv = [str(argument) for argument in argv]
    if argv and os.path.isabs(argv[0]):
        folder = os.path.basename(os.path.dirname(argv[0]))
        argv[0] = f"{folder}/{os.path.basename(argv[0])}" if folder == "tools" \
            else os.path.basename(argv[0])
    portable = argv[:1]
    for argument in argv[1:]:
        name, equals, value = argument.partition("=")
        if equals and name.startswith("-"):
            portable.append(f"{name}={portable_name(value)}")
        else:
            portable.append(portable_name(argument))
    return command_line(portable)


_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~])/(?:[^\s`'\"/]+/)*([^\s`'\"/]+)/?")


def portable_text(text):
    """`text` with every absolute path in it written by its last component.

    Examples:
    >>> portable_text("distilled from /home/me/runs/teacher/ (see https://x.org/a)")
    'distilled from teacher (see https://x.org/a)'
    """
    return _ABSOLUTE_PATH.sub(r"\1", text)


def _portable_value(value):
    return portable_name(value) if isinstance(value, str) and os.path.isabs(value) else value


# === Facts about files, dates, versions and the command ===

def utc_now():
    """The current time, UTC, ISO 8601 to the second (e.g. `2025-01-31T12:00:00+00:00`)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def file_date(path):
    """When `path` was last written, UTC, ISO 8601 to the second."""
    stamp = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
    return stamp.isoformat(timespec="seconds")


def file_facts(path, role):
    """`{"role", "path", "lines", "sha256"}` of a data file, read in 1 MiB blocks.

    A last line without a final newline counts as a line. A file that is no
    longer there gives `lines` and `sha256` None.

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "train.txt")
    >>> _ = open(path, "wb").write(b"a b\\nc d")
    >>> facts = file_facts(path, "training")
    >>> facts["lines"], facts["sha256"][:12]
    (2, 'f67d8cb354ad')
    """
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        return {"role": role, "path": path, "lines": None, "sha256": None}
    digest, lines, last = hashlib.sha256(), 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
            lines += block.count(b"\n")
            last = block[-1:]
    if last != b"\n":
        lines += 1
    return {"role": role, "path": path, "lines": lines, "sha256": digest.hexdigest()}


def library_versions():
    """`{"nlp-transfer-zoo", "keras", "tensorflow", "python"}` versions of this run."""
    import keras
    import tensorflow as tf

    try:
        ours = importlib.metadata.version(LIBRARY)
    except importlib.metadata.PackageNotFoundError:
        ours = "unknown (not installed)"
    return {LIBRARY: ours, "keras": keras.__version__, "tensorflow": tf.__version__,
            "python": sys.version.split()[0]}


def command_line(argv):
    """`argv` as one shell-quoted line; a script path gets `python` in front.

    Examples:
    >>> command_line(["tools/train.py", "--train_data=my data.txt", "--epochs=3"])
    "python tools/train.py '--train_data=my data.txt' --epochs=3"
    """
    argv = [str(argument) for argument in argv]
    if argv and argv[0].endswith(".py"):
        argv = ["python"] + argv
    return shlex.join(argv)


# === Dict → Markdown ===

def _cell(value, exact=False):
    """A table cell: floats to 4 decimals unless `exact`, `|` and newlines escaped."""
    if isinstance(value, bool) or value is None:
        text = json.dumps(value)
    elif isinstance(value, float) and exact:
        text = repr(value)
    elif isinstance(value, float):
        text = f"{value:.4f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3g}"
    elif isinstance(value, (int, str)):
        text = str(value)
    else:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    # Paths by their names (a corpus list, a teacher): the card travels.
    return portable_text(text).replace("|", "\\|").replace("\n", " ")


def _table(header, rows, exact=False):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(value, exact) for value in row) + " |" for row in rows]
    return lines


def entity_types(labels):
    """The entity types named by tag labels ("B-LOC" → "LOC"), or the labels themselves.

    Examples:
    >>> entity_types(["O", "B-LOC", "I-LOC", "B-PER", "I-PER"])
    ['LOC', 'PER']
    >>> entity_types(["NONE", "LOC"])
    ['LOC', 'NONE']
    """
    return sorted({_TAG_PREFIX.sub("", label) for label in labels or () if label != "O"})


def _split_per_type(metrics, labels):
    """(overall metrics, {type: {score: value}}) from flat `<TYPE>_f1` keys or `per_type`."""
    overall, per_type = {}, {}
    types = set(entity_types(labels))
    for name, value in metrics.items():
        if name == "per_type" and isinstance(value, dict):
            for entity_type, scores in value.items():
                per_type.setdefault(entity_type, {}).update(scores)
            continue
        prefix, _, score = name.rpartition("_")
        if prefix in types and score in _SCORE_NAMES:
            per_type.setdefault(prefix, {})[score] = value
        else:
            overall[name] = value
    return overall, per_type


def _metrics_lines(metrics, labels):
    overall, per_type = _split_per_type(metrics, labels)
    lines = _table(["Metric", "Value"], sorted(overall.items()))
    if per_type:
        scores = [name for name in _SCORE_NAMES if any(name in s for s in per_type.values())]
        lines += ["", "Per entity type:", ""]
        lines += _table(["Entity type"] + scores,
                        [[entity_type] + [values.get(name, "") for name in scores]
                         for entity_type, values in sorted(per_type.items())])
    return lines


def _front_matter(card):
    from huggingface_hub import ModelCardData

    tags = [LIBRARY] + [tag for tag in (card.get("task"), card.get("preset")) if tag]
    tags += [tag for tag in card.get("tags", ()) if tag not in tags]
    datasets = list(dict.fromkeys(portable_name(facts["path"])
                                  for facts in card.get("data", ())))
    final = (card.get("results") or [{}])[-1].get("values", {})
    metrics = sorted(name for name, value in
                     _split_per_type(final, card.get("labels"))[0].items()
                     if isinstance(value, float))
    base = card.get("base")
    data = ModelCardData(library_name=card.get("library_name", "keras"), tags=tags,
                         datasets=datasets or None, metrics=metrics or None,
                         base_model=_base_name(base) if base else None,
                         pipeline_tag=card.get("pipeline_tag"),
                         license=card.get("license"))  # left out when unknown
    return ["---", data.to_yaml(), "---"]


def _base_name(base):
    # Card data of older callers gives the checkpoint's path.
    return base.get("name") or portable_name(base["path"])


def _model_lines(card):
    base = card.get("base")
    if base:
        origin = f"`{_base_name(base)}` ({base.get('format') or 'unknown format'})"
    else:
        origin = "random initialisation"
    rows = [["Task", card.get("task") or "unknown"]]
    options = card.get("task_options") or {}
    rows += [[f"Task option `{name}`", value] for name, value in sorted(options.items())]
    rows += [["Preset", card.get("preset") or "none"], ["Base checkpoint", origin]]
    rows += [[name, value] for name, value in card.get("model_facts", ())]
    lines = ["## Model", ""] + _table(["", ""], rows)
    labels = card.get("labels")
    if labels:
        lines += ["", f"Labels ({len(labels)}, in label-id order): "
                  + ", ".join(f"`{label}`" for label in labels)]
    return lines


def _data_lines(card):
    rows = [[facts["role"], f"`{portable_name(facts['path'])}`",
             "missing" if facts["lines"] is None else facts["lines"],
             "missing" if facts["sha256"] is None else f"`{facts['sha256']}`"]
            for facts in card.get("data", ())]
    if not rows:
        return []
    return ["## Data", ""] + _table(["Role", "File", "Lines", "SHA-256"], rows)


def _results_lines(card):
    lines = []
    best = card.get("best")
    if best:
        lines += [f"Best epoch: {best['epoch']}, chosen by `{best['monitor']}` = "
                  f"{_cell(best['value'])} (saved {best.get('date') or 'date not recorded'}).", ""]
        if best.get("validation"):
            lines += _metrics_lines(best["validation"], card.get("labels")) + [""]
    for result in card.get("results", ()):
        lines += [f"{result['title']}, written {result.get('date') or '(date not recorded)'}:",
                  ""]
        lines += _metrics_lines(result["values"], card.get("labels")) + [""]
    if not lines:
        return []
    return ["## Validation results", ""] + lines[:-1]


def format_test_result(test, labels=None):
    """The Markdown of one evaluation in the card's test section (see `with_test_result`).

    Args:
        test: `{"path", "lines", "sha256", "date", "command", "metrics"}`.
        labels: the model's labels (for per-entity-type tables).
    """
    path = portable_name(test["path"])
    lines = [_TEST_ENTRY.format(path.replace("--", "-\\-")), f"### `{os.path.basename(path)}`",
             "", f"`{path}`: {test['lines']} lines, SHA-256 `{test['sha256']}`; evaluated "
             f"{test['date']} with `{test['command']}`.", ""]
    return "\n".join(lines + _metrics_lines(test["metrics"], labels)) + "\n"


def _test_lines(card):
    if card.get("test_section") is not None:
        body = card["test_section"]
    else:
        entries = [format_test_result(test, card.get("labels"))
                   for test in card.get("tests", ())]
        body = "\n".join(entries) if entries else _NO_TESTS + "\n"
    return ["## Test results", "", _TEST_BEGIN, body.rstrip("\n"), "", _TEST_END]


def _usage_lines(card):
    lines = ["## Reproduce", ""]
    if card.get("command"):
        note = card.get("command_note", "The command that produced this directory")
        lines += [f"{note} (files by their names):", "",
                  _COMMAND_MARK, "```sh", card["command"], "```"]
    else:
        lines += ["The command was not recorded."]
    for title, command in card.get("other_commands", ()):
        lines += ["", f"{title}:", "", "```sh", command, "```"]
    return lines


def _limits_lines(card):
    if not card.get("limits"):
        return []
    return ["## Limits", ""] + [f"- {limit}" for limit in card["limits"]]


def card_markdown(card):
    """The model card (`README.md` text) for `card`, a dict of plain data.

    Args:
        card: a dict; every key but `title` may be missing:
            title: the heading; summary: a paragraph under it;
            task, preset, task_options, labels; tags (extra YAML tags);
            base: `{"name", "format"}` of the starting checkpoint, or None
                for random initialisation;
            model_facts: extra `(name, value)` rows of the model table;
            data: `file_facts` dicts; hyperparameters: the resolved config;
            best: `{"monitor", "value", "epoch", "date", "validation"}`;
            results: `[{"title", "date", "values"}]`, the last one the
                final metrics (its float names go to the YAML `metrics`);
            tests: `[{"path", "lines", "sha256", "date", "command", "metrics"}]`,
                or test_section: the Markdown of a test section to carry over;
            pipeline_tag, license: the YAML fields (left out when missing);
            command (with command_note, and
                other_commands: `[(title, command)]`);
            versions: `{library: version}`; limits: a list of sentences.

    Returns:
        The Markdown text, front matter first.

    Examples:
    >>> text = card_markdown({"title": "CoNLL tagger", "task": "tagging",
    ...                       "labels": ["O", "B-LOC", "I-LOC"],
    ...                       "results": [{"title": "Final", "date": "2025-01-01T00:00:00+00:00",
    ...                                    "values": {"entity_f1": 0.5, "LOC_f1": 0.5}}]})
    >>> "metrics:" in text, "| LOC | 0.5000 |" in text
    (True, True)
    """
    # Titles and summaries may quote a path (a teacher, what was exported).
    lines = _front_matter(card) + ["", f"# {portable_text(card['title'])}", ""]
    if card.get("summary"):
        lines += [portable_text(card["summary"]), ""]
    sections = [_model_lines(card), _data_lines(card)]
    if card.get("hyperparameters"):
        sections.append(["## Hyperparameters", "", "The resolved configuration of the run "
                         "(`config.json`):", ""]
                        + _table(["Setting", "Value"], sorted(card["hyperparameters"].items()),
                                 exact=True))
    sections += [_results_lines(card), _test_lines(card), _usage_lines(card)]
    if card.get("versions"):
        sections.append(["## Software", ""]
                        + _table(["Library", "Version"], sorted(card["versions"].items())))
    sections.append(_limits_lines(card))
    for section in sections:
        if section:
            lines += section + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def read_command(markdown):
    """The command recorded in a card's "Reproduce" section, or None."""
    match = re.search(re.escape(_COMMAND_MARK) + r"\n```sh\n(.*?)\n```", markdown, re.S)
    return match.group(1) if match else None


def _read_front_matter(markdown):
    """The YAML front matter of a card as a dict ({} without one)."""
    from huggingface_hub import ModelCard

    try:
        return ModelCard(markdown, ignore_metadata_errors=True).data.to_dict()
    except (ValueError, TypeError):
        return {}


def read_test_section(markdown):
    """The Markdown between a card's test markers, or None when it has none."""
    begin, end = markdown.find(_TEST_BEGIN), markdown.find(_TEST_END)
    if begin < 0 or end < begin:
        return None
    return markdown[begin + len(_TEST_BEGIN):end].strip("\n") + "\n"


def with_test_result(markdown, entry, path):
    """`markdown` with the test entry of data file `path` replaced by (or added as) `entry`.

    Only the text between the test markers changes; a card without them
    gets the section appended.

    Examples:
    >>> card = card_markdown({"title": "m"})
    >>> test = {"path": "/d/test.txt", "lines": 3, "sha256": "ab", "date": "d1",
    ...         "command": "python tools/evaluate.py", "metrics": {"accuracy": 0.5}}
    >>> once = with_test_result(card, format_test_result(test), "/d/test.txt")
    >>> twice = with_test_result(once, format_test_result(dict(test, date="d2")), "/d/test.txt")
    >>> twice.count("### `test.txt`"), "d2" in twice, "d1" in twice
    (1, True, False)
    """
    section = read_test_section(markdown)
    if section is None:
        markdown = markdown.rstrip("\n") + "\n\n" + "\n".join(_test_lines({})) + "\n"
        section = read_test_section(markdown)
    marker = _TEST_ENTRY.format(portable_name(path).replace("--", "-\\-"))
    entries = [] if section.startswith(_NO_TESTS) else [
        piece for piece in re.split(r"(?m)^(?=<!-- test: )", section) if piece.strip()]
    same = [i for i, piece in enumerate(entries) if piece.startswith(marker + "\n")]
    if same:  # in place: the order of the test sets stays
        entries[same[0]:same[-1] + 1] = [entry]
    else:
        entries.append(entry)
    body = "\n".join(piece.rstrip("\n") + "\n" for piece in entries)
    begin = markdown.index(_TEST_BEGIN) + len(_TEST_BEGIN)
    end = markdown.index(_TEST_END)
    return markdown[:begin] + "\n" + body + "\n" + markdown[end:]


# === Cards of model directories and exports ===


def _base_checkpoint(path, base_model_id=None):
    """`{"name", "format"}` of the checkpoint at `path`: `base_model_id` or the folder's name."""
    if not path:
        return None
    from nlpzoo.zoo.checkpoints import checkpoint_format

    try:
        found = checkpoint_format(path)
    except (ValueError, OSError):
        found = "no longer readable"
    return {"name": base_model_id or portable_name(os.path.abspath(path)), "format": found}


def card_flag(name):
    """The value of the binaries' card flag `name` (`base_model_id`, `license`), or None.

    The flags are defined in `tools/cli/run_setup.py`; read here when the
    binary that writes the card has parsed them, so that every card-writing
    binary gets them without passing them through.

    Examples:
    >>> card_flag("no_such_flag") is None
    True
    """
    from absl import flags

    values = flags.FLAGS
    if name not in values or not values.is_parsed():
        return None
    return getattr(values, name) or None


def _pipeline_tag(task_name):
    """The Hub's pipeline tag of a registered task (`Task.pipeline_tag`), or None."""
    from nlpzoo.tasks.registry import get_task_class

    try:
        return get_task_class(task_name).pipeline_tag
    except ValueError:  # a task of a --task_module not imported here
        return None


def _limits(max_seq_length, lowercase, labels, task_options=None):
    limits = []
    if max_seq_length and "stride" in (task_options or {}):  # a word task: windows
        limits.append(f"Each input is packed into at most {max_seq_length} WordPiece tokens, "
                      "[CLS] and [SEP] included. Training truncates longer sentences (their "
                      "count is logged); prediction, evaluation and the exported model read "
                      "them in overlapping windows (`stride` "
                      f"{task_options.get('stride') or 'half the window'}), so every word "
                      "gets a label.")
    elif max_seq_length:
        limits.append(f"Each input is packed into at most {max_seq_length} WordPiece tokens, "
                      "[CLS] and [SEP] included; training and evaluation truncate what lies "
                      "beyond, so the model never sees it in one pass.")
    if lowercase is not None:
        limits.append("Text is lower-cased and accents are stripped before WordPiece (uncased)."
                      if lowercase else "Text is used as written (cased): `Paris` and "
                      "`paris` are different inputs.")
    if labels:
        limits.append(f"It can only output the {len(labels)} labels it was trained on: "
                      + ", ".join(f"`{label}`" for label in labels) + ".")
    limits.append("Words missing from the vocabulary are split into known pieces, or become "
                  "[UNK] when no split exists.")
    return limits


def training_card(model_dir, argv, base_model_id=None, license=None):
    """The card data of a tools/train.py model directory (config.json, metrics, records).

    Args:
        model_dir: the directory; its `config.json` must exist.
        argv: the command line of the run (`sys.argv`); None when unknown.
        base_model_id: what the card calls the starting checkpoint (a Hub id
            such as `sentence-transformers/all-MiniLM-L6-v2`); by default
            `--base_model_id`, else the checkpoint folder's name.
        license: the model's license (`apache-2.0`, ...); by default
            `--license`; left out when unknown.
    """
    config = read_json_file(md.path(model_dir, md.CONFIG))
    labels = config.get("labels") or []
    data = [file_facts(config["train_data"], "training")]
    if config.get("eval_data"):
        data.append(file_facts(config["eval_data"], "validation"))
    base = _base_checkpoint(config.get("init_checkpoint"),
                            base_model_id or card_flag("base_model_id"))
    origin = (f"fine-tuned from {base['name']}" if base else
              f"trained from scratch ({config.get('preset') or 'a zoo preset'})")
    card = {
        "title": f"{config.get('task', 'model')} model {origin}",
        "summary": f"Trained with {LIBRARY}'s `tools/train.py`. Load it with "
                   "`keras.saving.load_model(\"best_model.keras\")` after `import zoo`, or use "
                   "it with `tools/predict.py --model_dir=<this directory>`.",
        "task": config.get("task"), "task_options": config.get("task_options"),
        "labels": labels, "preset": config.get("preset"), "base": base,
        "pipeline_tag": _pipeline_tag(config.get("task")),
        "license": license or card_flag("license"),
        "model_facts": [("Parameters (trainable / total)",
                         f"{config.get('trainable_parameters', '?'):,} / "
                         f"{config.get('total_parameters', '?'):,}"
                         if "total_parameters" in config else "not recorded")],
        "data": data,
        "hyperparameters": {k: _portable_value(v) for k, v in config.items()
                            if k not in ("labels",)},
        "command": portable_command(argv) if argv else None,
        "versions": library_versions(),
        "limits": _limits(config.get("max_seq_length"), config.get("lowercase"), labels,
                          config.get("task_options")),
    }
    record = md.path(model_dir, md.BEST_MODEL + ".json")
    if os.path.exists(record):
        best = read_json_file(record)
        best.setdefault("date", file_date(md.path(model_dir, md.BEST_MODEL)))
        card["best"] = best
    _add_final_metrics(card, model_dir, "Final evaluation of the best model on the validation "
                       "data, `metrics.json`")
    return card


def _add_final_metrics(card, model_dir, title):
    """The run's `metrics.json`, dated, as the card's results (when it exists)."""
    metrics = md.path(model_dir, md.METRICS)
    if os.path.exists(metrics):
        card["results"] = [{"title": title, "date": file_date(metrics),
                            "values": read_json_file(metrics)}]


def pretraining_card(model_dir, argv):
    """The card data of a tools/pretrain.py model directory: corpus, steps, losses."""
    config = read_json_file(md.path(model_dir, md.CONFIG))
    card = {
        "title": f"{config.get('preset')} encoder pretrained with {config.get('objective')}",
        "summary": f"Pretrained with {LIBRARY}'s `tools/pretrain.py`; `encoder/` is the "
                   "checkpoint to fine-tune: `tools/train.py --init_checkpoint=<this "
                   "directory>`.",
        "task": "pretraining", "tags": [config.get("objective")],
        "preset": config.get("preset"), "base": None, "pipeline_tag": _PRETRAINING_PIPELINE,
        "license": card_flag("license"),
        "model_facts": [("Objective", config.get("objective")),
                        ("Training steps", config.get("total_steps"))],
        "data": [file_facts(path, "corpus") for path in config.get("corpus", ())],
        "hyperparameters": {k: _portable_value(v) for k, v in config.items()},
        "command": portable_command(argv), "versions": library_versions(),
        "limits": _limits(config.get("max_seq_length"), config.get("lowercase"), None)[:2],
    }
    _add_final_metrics(card, model_dir, "Losses and accuracies on the held-out sequences at "
                       "the end, `metrics.json`")
    return card


def export_card(argv, task, labels, max_seq_length, lowercase, source, serving_inputs,
                model_dir=None, task_options=None, preset=None, base=None):
    """The card data of a tools/export.py SavedModel directory.

    With the `model_dir` the model was trained in, the card carries that
    run's data, hyperparameters, metrics and test results (and its training
    command, when its own card recorded one).

    Args:
        argv: the export command line.
        task, labels, max_seq_length, lowercase: what the served model does.
        source: what was exported (for the summary).
        serving_inputs: the names of the signature's string inputs.
        model_dir: the training directory, when known.
        task_options, preset: the task options and preset (without `model_dir`).
        base: the checkpoint path the model's encoder comes from (without `model_dir`).
    """
    from nlpzoo.tasks.modeling.serving import SIGNATURE

    card = {}
    if model_dir and os.path.exists(md.path(model_dir, md.CONFIG)):
        card = training_card(model_dir, argv)
        trained_card = md.path(model_dir, CARD)
        if os.path.exists(trained_card):
            with open(trained_card, encoding="utf-8") as f:
                markdown = f.read()
            card["test_section"] = read_test_section(markdown)
            front = _read_front_matter(markdown)  # what the training run's flags named
            if front.get("base_model") and card.get("base") and not card_flag("base_model_id"):
                card["base"]["name"] = front["base_model"]
            card["license"] = card.get("license") or front.get("license")
            training_command = read_command(markdown)
            if training_command:
                card["other_commands"] = [("The training run it comes from", training_command)]
    else:
        card.update(task=task, task_options=task_options, preset=preset,
                    base=_base_checkpoint(base, card_flag("base_model_id")),
                    pipeline_tag=_pipeline_tag(task), license=card_flag("license"),
                    versions=library_versions())
    inputs = ", ".join(f"`{name}`" for name in serving_inputs)
    card.update(
        title=f"{task} model exported as a TensorFlow SavedModel",
        summary=f"Exported from {source} by {LIBRARY}'s `tools/export.py`. The "
                f"`{SIGNATURE}` signature takes 1-D string tensors ({inputs}) of raw text; "
                "tokenization, packing and decoding run inside the graph:\n\n```python\n"
                "import tensorflow as tf\nserve = tf.saved_model.load(\"<this directory>\")"
                f".signatures[\"{SIGNATURE}\"]\n```",
        task=task, labels=labels or [], command=portable_command(argv),
        command_note="The command that exported it",
        limits=_limits(max_seq_length, lowercase, labels, task_options),
    )
    return card


# What reads each checkpoint format (the card's `library_name`, as the Hugging Face Hub
# understands it).
_FORMAT_LIBRARIES = {"native": "keras", "keras_hub": "keras-hub", "huggingface": "transformers"}
_FORMAT_LOADERS = {
    "native": "`zoo.load_encoder(\"<this directory>\")` after `import zoo`, or "
              "`tools/train.py --init_checkpoint=<this directory>`",
    "keras_hub": "`keras_hub.models.Backbone.from_preset(\"<this directory>\")` (config.json "
                 "names the backbone class; its tokenizer: "
                 "`keras_hub.models.Tokenizer.from_preset`)",
    "huggingface": "`transformers.BertModel.from_pretrained(\"<this directory>\")` (and "
                   "`BertTokenizer`)",
}


def conversion_card(argv, input_path, what, output_format, config, lowercase):
    """The card data of a tools/convert.py checkpoint directory.

    Args:
        argv: the convert command line.
        input_path: --input; what: what was converted (for the summary).
        output_format: "native", "keras_hub" or "huggingface".
        config: the encoder's configuration (`get_config()` of its transformer).
        lowercase: whether its tokenizer lower-cases.

    Examples:
    >>> card = conversion_card(["convert.py"], "/m", "/m", "huggingface",
    ...                        {"num_layers": 6, "hidden_dim": 384}, True)
    >>> card["library_name"], card["model_facts"][:2]
    ('transformers', [('Layers', 6), ('Hidden size', 384)])
    """
    facts = [(name, config[key]) for name, key in (
        ("Layers", "num_layers"), ("Hidden size", "hidden_dim"), ("Attention heads", "num_heads"),
        ("Intermediate size", "intermediate_dim"), ("Vocabulary", "vocabulary_size"),
        ("Longest input (positions)", "max_sequence_length")) if key in config]
    limits = []
    if "max_sequence_length" in config:
        limits.append(f"At most {config['max_sequence_length']} WordPiece tokens per input "
                      "([CLS] and [SEP] included): the position embeddings end there.")
    limits.append("Text is lower-cased and accents are stripped before WordPiece (uncased)."
                  if lowercase else "Text is used as written (cased).")
    limits.append("An encoder only: a task head, if the source had one, is not included.")
    return {
        "title": f"BERT encoder converted to the {output_format} format",
        "summary": f"Converted from {what} by {LIBRARY}'s `tools/convert.py`. Load it with "
                   f"{_FORMAT_LOADERS[output_format]}.",
        "library_name": _FORMAT_LIBRARIES[output_format], "tags": ["bert", output_format],
        "task": "encoder", "base": _base_checkpoint(input_path, card_flag("base_model_id")),
        "pipeline_tag": "feature-extraction", "license": card_flag("license"),
        "model_facts": facts, "command": portable_command(argv),
        "versions": library_versions(), "limits": limits,
    }


def write_model_card(directory, card):
    """Writes `card_markdown(card)` to `directory/README.md`, atomically; returns the path."""
    path = os.path.join(directory, CARD)
    write_text_atomically(path, [card_markdown(card)])
    return path


def record_test_result(model_dir, data_path, metrics, argv, labels=None):
    """Adds (or replaces) `data_path`'s entry in the test section of `model_dir`'s card.

    Every other byte of the card stays as it was. A directory without a
    card (trained before cards existed) gets one first, from `training_card`
    (its command then reads "not recorded").

    Returns:
        The card's path.
    """
    path = os.path.join(model_dir, CARD)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            markdown = f.read()
    else:
        markdown = card_markdown(training_card(model_dir, None))
    facts = file_facts(data_path, "test")
    test = dict(facts, date=utc_now(), command=portable_command(argv), metrics=metrics)
    markdown = with_test_result(markdown, format_test_result(test, labels), facts["path"])
    write_text_atomically(path, [markdown])
    return path
