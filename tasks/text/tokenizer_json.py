"""A Hugging Face `tokenizer.json`, read with the type of every part checked.

Each tokenizer family reads its own model out of the file (`WordPiece`, `BPE`,
`Unigram`); what they share is the outline, checked here once: a JSON object whose
`model` is an object, whose `normalizer`, `pre_tokenizer`, `post_processor` and
`decoder` are objects or null, and whose `added_tokens` is a list of objects. A file
that breaks the outline is a one-line `DataFormatError` naming the file and the field,
never an `AttributeError` from deep inside a reader.
"""

from nlpzoo.tasks.io.json_text import expect_type, read_json_file

_COMPONENTS = ("normalizer", "pre_tokenizer", "post_processor", "decoder")
# A "Sequence" component lists its steps under one of these keys.
_STEP_LISTS = ("normalizers", "pretokenizers", "processors", "decoders")


def _check_component(component, path, field):
    if component is None:
        return
    expect_type(component, dict, path, field)
    for key in _STEP_LISTS:
        if key in component:
            for index, step in enumerate(expect_type(component[key], list, path,
                                                     f"{field}.{key}")):
                _check_component(step, path, f"{field}.{key}[{index}]")
    if "type" in component:
        expect_type(component["type"], str, path, f"{field}.type")


def read_tokenizer_json(path):
    """The content of the `tokenizer.json` at `path`, its outline checked (module docstring).

    Raises:
        MissingDataFileError: no such file.
        InvalidJson: not JSON, or a part of the wrong type; the message names the field.

    Examples:
    >>> import json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
    >>> _ = open(path, "w").write(json.dumps({"model": {"type": "BPE", "vocab": {}}}))
    >>> read_tokenizer_json(path)["model"]["type"]
    'BPE'
    >>> _ = open(path, "w").write(json.dumps({"model": "BPE"}))
    >>> read_tokenizer_json(path)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.json_text.InvalidJson: .../tokenizer.json: expected "model" to be a JSON object ({...}), found a string
    >>> _ = open(path, "w").write(json.dumps({"model": {"type": "BPE"},
    ...                                       "normalizer": {"type": "Sequence", "normalizers": [7]}}))
    >>> read_tokenizer_json(path)
    Traceback (most recent call last):
    ...
    nlpzoo.tasks.io.json_text.InvalidJson: .../tokenizer.json: expected "normalizer.normalizers[0]" to be a JSON object ({...}), found a number
    """
    path = str(path)
    content = read_json_file(path, dict, "a tokenizer.json")
    if "model" not in content:
        expect_type(None, dict, path, "model")
    model = expect_type(content["model"], dict, path, "model")
    if "type" in model:
        expect_type(model["type"], str, path, "model.type")
    if "vocab" in model:
        expect_type(model["vocab"], (dict, list), path, "model.vocab")
    if "merges" in model:
        expect_type(model["merges"], list, path, "model.merges")
    for field in _COMPONENTS:
        _check_component(content.get(field), path, field)
    added = content.get("added_tokens")
    if added is not None:
        for index, token in enumerate(expect_type(added, list, path, "added_tokens")):
            expect_type(token, dict, path, f"added_tokens[{index}]")
    return content
