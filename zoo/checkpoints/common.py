"""What every checkpoint format shares: directories, JSON, config tables, weight assignment.

A format module (`native`, `keras_hub`, `huggingface`) knows its files, its
config fields and where each encoder variable lives in its weights; the steps
that are the same for all of them live here once:

- `checkpoint_directory` and `read_json`: paths and JSON files, with errors
  that name the file;
- `encoder_arguments`: a format's "config field → encoder argument" table
  applied to its config, refusing what the encoder cannot represent;
- `assign_weights`: a plan of `PlannedWeight`s (encoder variable ↔ the
  source's name for it ↔ layout change) checked in full, then assigned;
- `load_checkpoint_encoder`: read config → build the encoder with overrides
  → assign the weights.

Examples:
>>> import keras, numpy as np
>>> kernel = keras.Variable(np.zeros((2, 3)), name="kernel")
>>> plan = [PlannedWeight(kernel, ("dense.weight",), (3, 2), to_variable=np.transpose)]
>>> assign_weights(plan, {"dense.weight": np.ones((3, 2))}, WeightSource("demo"))
[]
>>> float(kernel.numpy().sum())
6.0
"""

import dataclasses
import logging
import os
from typing import Any, Callable, Optional

import numpy as np

from nlpzoo.tasks.io.json_text import read_json_file
from nlpzoo.zoo.checkpoints.handles import is_handle, resolve_handle

logger = logging.getLogger(__name__)

# The preset `build_encoder` starts from when it rebuilds a checkpoint's encoder;
# every field that shapes the encoder comes from the checkpoint, so the choice
# only matters for defaults a checkpoint cannot express.
BASE_PRESET = "bert_base"
# Encoder arguments that are counts or sizes; every other table argument is a
# float (dropout rates, epsilon).
INTEGER_ARGUMENTS = ("vocabulary_size", "hidden_dim", "num_layers", "num_heads",
                     "intermediate_dim", "max_sequence_length", "num_segments",
                     "embedding_dim", "position_offset", "position_buckets",
                     "max_relative_positions", "local_attention",
                     "global_attn_every_n_layers")


def checkpoint_directory(path):
    """The checkpoint directory `path` names: itself, the folder of a file in it, or the
    local copy of a handle (`hf://…`, `kaggle://…`; `zoo.checkpoints.handles`).

    Raises:
        FileNotFoundError: `path` is neither a directory nor a file in one.

    Examples:
    >>> import os, tempfile
    >>> directory = tempfile.mkdtemp()
    >>> open(os.path.join(directory, "config.json"), "w").close()
    >>> checkpoint_directory(os.path.join(directory, "config.json")) == directory
    True
    >>> checkpoint_directory(os.path.join(directory, "absent"))
    Traceback (most recent call last):
    ...
    FileNotFoundError: .../absent: no such checkpoint directory
    """
    if is_handle(path):
        return resolve_handle(path)
    path = os.fspath(path)
    if os.path.isfile(path):  # a file inside the checkpoint (config.json, encoder.keras)
        path = os.path.dirname(path) or "."
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{path}: no such checkpoint directory")
    return path


def read_json(path, what, directory_kind="a checkpoint directory"):
    """The JSON content of `path`; errors name the file, and say what was expected.

    Args:
        path: the JSON file.
        what: what the file is called in the error ("config.json").
        directory_kind: what its folder should be, for the error when the
            file is absent ("a KerasHub preset directory").

    Examples:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "config.json")
    >>> read_json(path, "config.json", "a Hugging Face checkpoint directory")
    Traceback (most recent call last):
    ...
    FileNotFoundError: .../config.json: no config.json
        (is this a Hugging Face checkpoint directory?)
    >>> _ = open(path, "w").write('{"hidden_size": 8}')
    >>> read_json(path, "config.json")
    {'hidden_size': 8}
    """
    try:
        return read_json_file(path, dict, what)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no {what} (is this {directory_kind}?)") from None


# Sizes no encoder of this library reaches; a config beyond them is corrupt or hostile, and is
# refused before a tensor of that size is allocated.
SIZE_LIMITS = {"vocabulary_size": 10_000_000, "hidden_dim": 65_536, "num_layers": 1_000,
               "num_heads": 1_024, "intermediate_dim": 262_144,
               "max_sequence_length": 1_048_576, "num_segments": 1_024, "embedding_dim": 65_536}


def check_config_fits_weights(config, weights, where):
    """Refuses a config whose sizes are out of range, or need far more numbers than the
    checkpoint's weights hold (e.g. a vocabulary of 2 billion beside a 90 MB file).

    Args:
        config: `build_encoder` fields read from the checkpoint.
        weights: the checkpoint's arrays (anything with `.size`), by name; the sizes are
            not compared for anything else (a native checkpoint's saved model).
        where: the config file, named by the error.

    Examples:
    >>> import numpy as np
    >>> config = dict(vocabulary_size=2_000_000_000, hidden_dim=8, num_layers=1,
    ...               intermediate_dim=16, max_sequence_length=8)
    >>> check_config_fits_weights(config, {"w": np.zeros(100)}, "config.json")
    Traceback (most recent call last):
    ...
    ValueError: config.json: vocabulary_size=2000000000 is out of range (at most 10000000)
    >>> config["vocabulary_size"] = 1_000_000
    >>> check_config_fits_weights(config, {"w": np.zeros(100)}, "config.json")
    Traceback (most recent call last):
    ...
    ValueError: config.json: its sizes need about 8,000,592 weights but the checkpoint holds 100: the config does not match the weights
    """
    for name, limit in SIZE_LIMITS.items():
        value = config.get(name)
        lowest = 0 if name == "num_segments" else 1  # DistilBERT has no segment table
        if isinstance(value, (int, float)) and not lowest <= value <= limit:
            raise ValueError(f"{where}: {name}={value} is out of range (at most {limit})")
    hidden = config.get("hidden_dim", 0)
    width = config.get("embedding_dim") or hidden
    embeddings = width * (config.get("vocabulary_size", 0) + config.get("max_sequence_length", 0)
                          + config.get("num_segments", 2))
    block = 4 * hidden * hidden + 2 * hidden * config.get("intermediate_dim", 0)
    blocks = 1 if config.get("share_layers") else config.get("num_layers", 0)
    needed = int(embeddings + blocks * block)
    if not isinstance(weights, dict):
        return  # a saved Keras model (native checkpoints): built from its own config already
    held = sum(int(getattr(value, "size", 0)) for value in weights.values())
    # The estimate leaves out biases and norms, and a checkpoint may hold extra heads:
    # only a config that needs several times what is there is refused.
    if needed > 2 * held + 1_000_000:
        raise ValueError(f"{where}: its sizes need about {needed:,} weights but the checkpoint "
                         f"holds {held:,}: the config does not match the weights")


def encoder_arguments(config, table, where, harmless_fields=None):
    """`build_encoder` arguments from a checkpoint's config, through a format's table.

    Args:
        config: the checkpoint's config fields (a dict read from its JSON).
        table: config field → (encoder argument, default when the field is
            absent; None = required). Arguments in `INTEGER_ARGUMENTS` must
            hold whole numbers; the others become floats.
        where: the config file, named by every error.
        harmless_fields: fields outside the table that do not change the
            computation (a layer's name, dtype). When given, any other field
            is refused: the encoder cannot represent it. When None, fields
            outside the table are not looked at.

    Returns:
        A dict of encoder arguments, one per table row.

    Raises:
        ValueError: a required field is missing, a value is not a number of
            the right kind, or an unknown field is set; the message names it.

    Examples:
    >>> table = {"hidden_size": ("hidden_dim", None), "hidden_dropout_prob": ("dropout", 0.1)}
    >>> encoder_arguments({"hidden_size": 8.0}, table, "config.json")
    {'hidden_dim': 8, 'dropout': 0.1}
    >>> encoder_arguments({"hidden_size": 8, "rotary": True}, table, "config.json",
    ...                   harmless_fields=("name",))
    Traceback (most recent call last):
    ...
    ValueError: config.json: config field(s) 'rotary' are not supported;
        a checkpoint with them cannot be imported exactly
    """
    if harmless_fields is not None:
        unknown = sorted(set(config) - set(table) - set(harmless_fields))
        if unknown:
            raise ValueError(f"{where}: config field(s) {', '.join(map(repr, unknown))} are not "
                             "supported; a checkpoint with them cannot be imported exactly")
    arguments = {}
    for field, (argument, default) in table.items():
        value = config.get(field, default)
        if value is None:
            raise ValueError(f"{where}: the required field {field!r} is missing")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: {field}={value!r} is not a number") from None
        if argument in INTEGER_ARGUMENTS:
            if isinstance(value, bool) or not number.is_integer():
                raise ValueError(f"{where}: {field}={value!r} is not an integer")
            number = int(number)
        arguments[argument] = number
    return arguments


@dataclasses.dataclass(frozen=True)
class PlannedWeight:
    """One encoder variable and where its value is in a checkpoint's weights.

    Attributes:
        variable: the encoder's Keras variable to set.
        source_names: its names in the checkpoint; the first one present is
            used (older checkpoints name some weights differently).
        source_shape: its shape in the checkpoint's layout.
        to_variable: turns a checkpoint value into the variable's layout
            (a transpose, a reshape); None keeps it as it is.
        label: how errors name it; by default the checkpoint name.
        position_table: a position embedding table, of which the first rows
            are kept when the encoder has fewer positions than the checkpoint.
    """

    variable: Any
    source_names: tuple
    source_shape: tuple
    to_variable: Optional[Callable] = None
    label: Optional[str] = None
    position_table: bool = False


@dataclasses.dataclass(frozen=True)
class WeightSource:
    """How errors name a checkpoint's weights: "<location>: the <kind> lacks 2 <unit>(s) ...".

    Attributes:
        location: the directory or file the weights come from.
        kind: "checkpoint" or "preset", as the format calls itself.
        unit: what one stored array is called: "tensor" (Hugging Face), "weight".
    """

    location: str
    kind: str = "checkpoint"
    unit: str = "weight"


def _first_rows(value, expected, source):
    """`value` cut to the encoder's number of positions, when it only has more."""
    if value.ndim == 2 and value.shape[1] == expected[1] and value.shape[0] > expected[0]:
        logger.info("using the first %d of the %s's %d positions", expected[0], source.kind,
                    value.shape[0])
        return value[: expected[0]]
    return value


def assign_weights(plan, tensors, source, refuse_unused=False):
    """Sets every planned variable from `tensors`, or none of them.

    Every entry of the plan is looked up and its shape checked before any
    variable changes, so a failed load leaves the encoder as it was.

    Args:
        plan: a list of `PlannedWeight`, one per encoder variable.
        tensors: the checkpoint's weights by name (numpy arrays, or anything
            `np.asarray` reads, such as Keras variables).
        source: a `WeightSource`, which names the checkpoint in errors.
        refuse_unused: raise when the checkpoint holds weights the plan does
            not use (a checkpoint of exactly the encoder's structure) instead
            of logging them (heads and buffers the encoder has no place for).

    Returns:
        The sorted names of the weights in `tensors` that were not used.

    Raises:
        ValueError: weights are missing (named), left over (named, with
            `refuse_unused`) or of the wrong shape (named, with both shapes in
            the checkpoint's layout).

    Examples:
    >>> import keras, numpy as np
    >>> bias = keras.Variable(np.zeros(3), name="bias")
    >>> plan = [PlannedWeight(bias, ("dense.bias", "dense.beta"), (3,))]
    >>> assign_weights(plan, {"dense.beta": np.ones(3), "head.bias": np.ones(2)},
    ...                WeightSource("demo"))
    ['head.bias']
    >>> assign_weights(plan, {"dense.bias": np.ones(4)}, WeightSource("demo", "preset"))
    Traceback (most recent call last):
    ...
    ValueError: demo: 1 weight(s) have the wrong shape (...): dense.bias: preset shape (4,),
        encoder expects (3,)
    """
    assignments, missing, wrong, used = [], [], [], set()
    for planned in plan:
        found = next((name for name in planned.source_names if name in tensors), None)
        if found is None:
            missing.append(planned.label or planned.source_names[0])
            continue
        used.add(found)
        value = np.asarray(tensors[found])
        expected = tuple(planned.source_shape)
        if planned.position_table:
            value = _first_rows(value, expected, source)
        if tuple(value.shape) != expected:
            wrong.append(f"{planned.label or found}: {source.kind} shape {tuple(value.shape)}, "
                         f"encoder expects {expected}")
            continue
        if planned.to_variable is not None:
            value = planned.to_variable(value)
        assignments.append((planned.variable, value))
    unused = sorted(set(tensors) - used)
    missing = list(dict.fromkeys(missing))  # a fused tensor feeds several variables
    if missing:
        raise ValueError(f"{source.location}: the {source.kind} lacks {len(missing)} "
                         f"{source.unit}(s) the encoder needs: {', '.join(missing)}")
    if unused and refuse_unused:
        raise ValueError(f"{source.location}: the {source.kind} has {len(unused)} "
                         f"{source.unit}(s) the encoder has no place for (an override "
                         f"contradicts it?): {', '.join(unused)}")
    if wrong:
        raise ValueError(f"{source.location}: {len(wrong)} {source.unit}(s) have the wrong shape "
                         "(does the configuration, or an override, contradict the weights?): "
                         f"{'; '.join(wrong)}")
    for variable, value in assignments:
        variable.assign(value.astype(variable.dtype, copy=False))
    if unused:
        logger.info("%s: %d %s %s(s) not used by the encoder: %s", source.location, len(unused),
                    source.kind, source.unit, ", ".join(unused))
    return unused


def load_checkpoint_encoder(path, overrides, read_config, read_weights, load_weights):
    """A zoo encoder built from a checkpoint's config and set from its weights.

    The template of every format's `load_*_encoder`: the config is read (and
    refused) first, then the weights (so unreadable weights fail before
    anything is built), then the encoder is built from `BASE_PRESET` with the
    config and `overrides`, and its weights are set.

    Args:
        path: the checkpoint directory.
        overrides: `build_encoder` fields that replace the checkpoint's.
        read_config: `read_config(path)` → a dict of `build_encoder` fields.
        read_weights: `read_weights(path)` → the checkpoint's weights.
        load_weights: `load_weights(encoder, path, weights)` sets them.

    Returns:
        The `keras.Model` named "encoder" from `zoo.build_encoder`.

    Examples:
    >>> config = dict(vocabulary_size=10, hidden_dim=16, num_layers=2, num_heads=2,
    ...               intermediate_dim=32, max_sequence_length=8)
    >>> encoder = load_checkpoint_encoder(
    ...     "unused", {"num_layers": 1}, read_config=lambda path: dict(config),
    ...     read_weights=lambda path: {}, load_weights=lambda encoder, path, weights: None)
    >>> encoder.name, len(encoder.output["hidden_states"])  # embeddings, then 1 block
    ('encoder', 2)
    """
    from nlpzoo.zoo.encoders import build_encoder

    config = read_config(path)
    config.update(overrides)
    weights = read_weights(path)
    check_config_fits_weights(config, weights, path)
    encoder = build_encoder(BASE_PRESET, **config)
    load_weights(encoder, path, weights)
    return encoder
