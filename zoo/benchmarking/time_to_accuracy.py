"""Time to accuracy: the wall seconds until a validation metric first reaches a target.

What a user feels is the time to a good model, not tokens per second. This
module races three ways of fine-tuning one checkpoint on one task, one after
the other in the same process, each for at most `max_epochs` epochs, each
evaluated on the same validation examples after every epoch:

- `OursContender`: the library as a user runs it, the Task's own pipeline and
  `zoo.load_pretrained`, with the settings of a committed recipe
  (`configs/*.flags`: learning rates, head, batch size, max length, epochs of
  the learning-rate schedule) and the preset's documented defaults for the rest.
- `KerasHubClassifierRecipe` / `KerasHubTaggerRecipe`: KerasHub's documented
  recipe, its own preprocessor or tokenizer at its default sequence length.
- `ExpertClassifier` / `ExpertTagger`: KerasHub's backbone fed our subwords in
  length-sorted batches padded to multiples of 8, as `--what=finetune` does.

The clock (`race`) starts before the checkpoint is loaded and runs through
tokenization, tracing, training and every evaluation; only reading the data
files comes before it. Each contender is seeded with the same seed.

`first_reached`, `heldout_split`, `read_recipe` and `time_ratios` are plain
Python (tests call them directly); the contenders import TensorFlow and
KerasHub when they are built.
"""

import gc
import time

import numpy as np

EXPERT_PAD_MULTIPLE = 8  # the expert peer's batches: longest row rounded up to this


def compile_with_schedule(model, settings, steps_per_epoch, jit_compile):
    """Compiles a KerasHub-side `model` with our AdamW and the recipe's schedule (warm-up
    over `settings["warmup_fraction"]` of `settings["epochs"]` epochs, then linear decay)
    and a sparse cross-entropy on logits, as every peer of this benchmark trains."""
    import keras

    from nlpzoo.tasks.training.optimization import create_optimizer

    steps = steps_per_epoch * settings["epochs"]
    model.compile(optimizer=create_optimizer(settings["learning_rate"], total_steps=steps,
                                             warmup_steps=int(settings["warmup_fraction"] * steps)),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=jit_compile)


# === Bookkeeping ===

def first_reached(history, target):
    """When a run of (seconds, metric) pairs, one per epoch, first reaches `target`.

    Args:
        history: `(seconds since the start, validation metric)` after each epoch,
            in order.
        target: the metric to reach (higher is better; reached when `>=`).

    Returns:
        A dict: `reached`, `seconds` and `epoch` (1-based) of the first epoch
        whose metric is at least `target` (None when none is), `best` (the
        highest metric) and `best_epoch`.

    Examples:
    >>> first_reached([(10.0, 0.80), (21.5, 0.951), (30.0, 0.97)], 0.95)
    {'reached': True, 'seconds': 21.5, 'epoch': 2, 'best': 0.97, 'best_epoch': 3}
    >>> first_reached([(10.0, 0.80), (20.0, 0.90)], 0.95)["reached"]
    False
    """
    best, best_epoch = None, None
    for epoch, (_, metric) in enumerate(history, 1):
        if best is None or metric > best:
            best, best_epoch = metric, epoch
    for epoch, (seconds, metric) in enumerate(history, 1):
        if metric >= target:
            return {"reached": True, "seconds": seconds, "epoch": epoch, "best": best,
                    "best_epoch": best_epoch}
    return {"reached": False, "seconds": None, "epoch": None, "best": best,
            "best_epoch": best_epoch}


def time_ratios(other, ours):
    """Other's time to the target / ours (above 1: ours got there sooner).

    `other` and `ours` are `race` results. Returns `(ratio, at_least)`:
    `ratio` when both reached the target; when only ours did, `ratio` is None
    and `at_least` is the other's whole run time / ours (it had not got there
    by then); otherwise both are None.

    Examples:
    >>> time_ratios({"reached": True, "seconds": 30.0}, {"reached": True, "seconds": 12.0})
    (2.5, None)
    >>> time_ratios({"reached": False, "seconds": None, "elapsed_seconds": 50.0},
    ...             {"reached": True, "seconds": 10.0})
    (None, 5.0)
    >>> time_ratios({"reached": True, "seconds": 5.0}, {"reached": False, "seconds": None})
    (None, None)
    """
    if not ours["reached"]:
        return None, None
    if other["reached"]:
        return round(other["seconds"] / ours["seconds"], 4), None
    return None, round(other["elapsed_seconds"] / ours["seconds"], 4)


def heldout_split(examples, heldout):
    """(training part, held-out part): the last `heldout` examples are held out.

    The split depends only on the file's order, so every run and every
    contender holds out the same examples.

    Examples:
    >>> heldout_split(list("abcdefg"), 2)
    (['a', 'b', 'c', 'd', 'e'], ['f', 'g'])
    """
    examples = list(examples)
    if not 0 < heldout < len(examples):
        raise ValueError(f"cannot hold out {heldout} of {len(examples)} examples: expected "
                         "at least 1 and fewer than all")
    return examples[:-heldout], examples[-heldout:]


def read_recipe(path):
    """The settings of a flags file (`--name=value` lines, `#` comments): a dict.

    A bare `--name` is True and `--noname` False; numbers become int or float.

    Examples:
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".flags", delete=False) as f:
    ...     _ = f.write("# TREC-6\\n--task=classification\\n--epochs=5\\n"
    ...                 "--learning_rate=1e-4\\n--casing_features\\n--nolowercase\\n")
    >>> read_recipe(f.name)
    {'task': 'classification', 'epochs': 5, 'learning_rate': 0.0001, 'casing_features': True, 'lowercase': False}
    """
    settings = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if not line.startswith("--"):
                raise ValueError(f"{path}:{number}: expected --name=value, got {line!r}")
            name, has_value, value = line[2:].partition("=")
            if not has_value:
                if name.startswith("no"):
                    settings[name[2:]] = False
                else:
                    settings[name] = True
                continue
            for kind in (int, float):
                try:
                    value = kind(value)
                    break
                except ValueError:
                    pass
            settings[name] = value
    return settings


def race(contender, target, max_epochs, clock=time.perf_counter):
    """Trains `contender` epoch by epoch until its validation metric reaches `target`
    or `max_epochs` epochs have run, evaluating after each; its record.

    The clock starts before `contender.setup()` (loading, tokenizing, building
    the model) and includes every evaluation.
    """
    start = clock()
    contender.setup()
    setup_seconds = clock() - start
    history, epoch_seconds, evaluate_seconds = [], [], []
    for epoch in range(max_epochs):
        began = clock()
        contender.train_epoch(epoch)
        trained = clock()
        metric = float(contender.evaluate())
        ended = clock()
        epoch_seconds.append(round(trained - began, 2))
        evaluate_seconds.append(round(ended - trained, 2))
        history.append((ended - start, metric))
        if metric >= target:
            break
    result = first_reached(history, target)
    result.update(
        seconds=None if result["seconds"] is None else round(result["seconds"], 2),
        best=round(result["best"], 4), elapsed_seconds=round(history[-1][0], 2),
        setup_seconds=round(setup_seconds, 2), epoch_seconds=epoch_seconds,
        evaluate_seconds=evaluate_seconds,
        history=[[round(seconds, 2), round(metric, 4)] for seconds, metric in history],
        **contender.describe())
    return result


def _release():
    """Frees the last contender's model before the next one is built."""
    import keras
    keras.backend.clear_session()
    gc.collect()


# === Ours ===

def recipe_settings(recipe):
    """Learning rates, warm-up fraction, max length and schedule epochs of a recipe
    (`read_recipe`): its own, else the fine-tuning defaults of its `preset`
    (`zoo.presets`).

    Examples:
    >>> recipe_settings({"preset": "minilm_l6_h384", "learning_rate": 1e-4, "epochs": 5})
    {'learning_rate': 0.0001, 'head_learning_rate': 0.001, 'warmup_fraction': 0.1, 'max_seq_length': 256, 'epochs': 5}
    """
    from nlpzoo.zoo.presets import ENCODER_PRESETS
    defaults = ENCODER_PRESETS[recipe["preset"]].fine_tuning
    return {name: recipe.get(name, getattr(defaults, name))
            for name in ("learning_rate", "head_learning_rate", "warmup_fraction",
                         "max_seq_length", "epochs")}


class OursContender:
    """The library with a committed recipe: the Task's pipeline, `zoo.load_pretrained`,
    `fit` one epoch at a time (each epoch its own `(seed, epoch)` order, as
    `tools/train.py`'s stream), `Task.evaluate` after each.

    Args:
        task: the `Task` (its options from the recipe, adapted to the training data).
        checkpoint: the Hugging Face checkpoint directory.
        recipe: `read_recipe` of the recipe's flags file.
        train, validation: training and validation examples.
        labels: the label names.
        jit_compile, pack_length: as `tools/train.py` resolves them.
        seed: the seed of the weights, dropout and the batch order.
    """

    def __init__(self, task, checkpoint, recipe, train, validation, labels, jit_compile,
                 pack_length, seed):
        self.task, self.checkpoint, self.recipe = task, checkpoint, recipe
        self.train, self.validation, self.labels = train, validation, labels
        self.jit_compile, self.pack_length, self.seed = jit_compile, pack_length, seed
        self.metric = task.monitor(len(labels))[0].removeprefix("val_")

    def setup(self):
        import keras
        from nlpzoo.zoo import load_pretrained
        from nlpzoo.zoo.checkpoints import read_tokenizer_settings

        keras.utils.set_random_seed(self.seed)
        settings = recipe_settings(self.recipe)
        self.batch_size = self.recipe.get("batch_size", 32)
        tokens, lowercase = read_tokenizer_settings(self.checkpoint)
        task = self.task.for_text_casing(lowercase)
        self.preprocessor = task.make_preprocessor(tokens, lowercase, settings["max_seq_length"])
        self.validation_examples = task.prediction_examples(self.validation, self.preprocessor)
        self.validation_dataset = task.make_dataset(
            self.validation_examples, self.preprocessor, self.labels,
            batch_size=self.batch_size, training=False)
        first_pass = self._pass(task, 0)
        self.steps_per_epoch = int(first_pass.reduce(0, lambda count, _: count + 1))
        total_steps = self.steps_per_epoch * settings["epochs"]
        options = dict(learning_rate=settings["learning_rate"], total_steps=total_steps,
                       warmup_steps=int(settings["warmup_fraction"] * total_steps),
                       head_learning_rate=settings["head_learning_rate"],
                       jit_compile=self.jit_compile, **task.model_head_options(self.labels))
        if "head" in self.recipe:
            options["head"] = self.recipe["head"]
        if self.pack_length:
            options["pack_length"] = self.pack_length
        self.model = load_pretrained(self.checkpoint, task, **options)
        self.task, self.settings, self.first_pass = task, settings, first_pass

    def _pass(self, task, epoch):
        return task.make_dataset(self.train, self.preprocessor, self.labels,
                                 batch_size=self.batch_size, training=True,
                                 seed=(self.seed, epoch))

    def train_epoch(self, epoch):
        dataset = self.first_pass if epoch == 0 else self._pass(self.task, epoch)
        self.model.fit(dataset, epochs=1, verbose=0, shuffle=False)

    def evaluate(self):
        return self.task.evaluate(self.model, self.validation_dataset,
                                  self.validation_examples, self.labels)[self.metric]

    def describe(self):
        return {"batch_size": self.batch_size, "max_seq_length": self.settings["max_seq_length"],
                "learning_rate": self.settings["learning_rate"],
                "head_learning_rate": self.settings["head_learning_rate"],
                "schedule_epochs": self.settings["epochs"], "steps_per_epoch": self.steps_per_epoch,
                "head": self.recipe.get("head"), "pack_length": self.pack_length}


# === KerasHub's documented recipe ===

class KerasHubClassifierRecipe:
    """`keras_hub.models.BertTextClassifier.from_preset(checkpoint, num_classes=…)`,
    compiled with KerasHub's defaults (`TextClassifier.compile`: Adam at 5e-5,
    sparse categorical cross-entropy, accuracy), `fit` on raw strings through its
    own preprocessor at its default sequence length, `evaluate` on raw strings."""

    def __init__(self, checkpoint, train, validation, labels, batch_size, jit_compile, seed):
        self.checkpoint, self.labels = checkpoint, labels
        self.batch_size, self.jit_compile, self.seed = batch_size, jit_compile, seed
        ids = {label: i for i, label in enumerate(labels)}
        self.x = np.array([example.text for example in train])
        self.y = np.array([ids[example.label] for example in train], "int32")
        self.validation_x = np.array([example.text for example in validation])
        self.validation_y = np.array([ids[example.label] for example in validation], "int32")

    def setup(self):
        import keras
        import keras_hub
        keras.utils.set_random_seed(self.seed)
        self.model = keras_hub.models.BertTextClassifier.from_preset(
            self.checkpoint, num_classes=len(self.labels))
        # KerasHub's optimizer, loss and metric ("auto"); XLA as every contender has it.
        self.model.compile(jit_compile=self.jit_compile)

    def train_epoch(self, epoch):
        self.model.fit(self.x, self.y, batch_size=self.batch_size, epochs=1, verbose=0)

    def evaluate(self):
        metrics = self.model.evaluate(self.validation_x, self.validation_y,
                                      batch_size=self.batch_size, return_dict=True, verbose=0)
        return metrics["sparse_categorical_accuracy"]

    def describe(self):
        return {"batch_size": self.batch_size,
                "sequence_length": self.model.preprocessor.sequence_length,
                "optimizer": "KerasHub's default: Adam, learning rate 5e-5, constant"}


class KerasHubTaggerRecipe:
    """`BertBackbone.from_preset` + a Dense token head (KerasHub has no token
    classifier), fed by KerasHub's own `BertTokenizer` word by word, every sentence
    packed `[CLS] … [SEP]` and padded to the default sequence length of KerasHub's
    BERT preprocessor, `fit` on the arrays (shuffled every epoch); the loss reads
    each word's first subword; optimizer and schedule as the expert peer's."""

    def __init__(self, checkpoint, train, validation, labels, batch_size, optimizer_settings,
                 jit_compile, seed):
        self.checkpoint, self.train, self.validation, self.labels = (
            checkpoint, train, validation, labels)
        self.batch_size, self.optimizer_settings = batch_size, optimizer_settings
        self.jit_compile, self.seed = jit_compile, seed

    def _arrays(self, sentences, tag_ids):
        """KerasHub's tokens of `sentences` padded to its sequence length: (x, y, weights,
        first-subword positions)."""
        import tensorflow as tf
        words = [word for sentence in sentences for word in sentence.words]
        pieces = self.tokenizer(tf.constant(words))  # eager: Python lists
        pieces = pieces.to_list() if hasattr(pieces, "to_list") else pieces
        unknown = self.tokenizer.token_to_id("[UNK]")
        length = self.sequence_length
        x = {name: np.zeros((len(sentences), length), "int32")
             for name in ("token_ids", "segment_ids", "padding_mask")}
        y = np.zeros((len(sentences), length), "int32")
        weights = np.zeros((len(sentences), length), "float32")
        starts, offset = [], 0
        for row, sentence in enumerate(sentences):
            ids, first = [self.tokenizer.cls_token_id], []
            for word_pieces in pieces[offset:offset + len(sentence.words)]:
                word_pieces = list(word_pieces) or [unknown]
                if len(ids) + len(word_pieces) > length - 1:
                    break  # the rest of the sentence does not fit
                first.append(len(ids))
                ids.extend(word_pieces)
            ids.append(self.tokenizer.sep_token_id)
            offset += len(sentence.words)
            x["token_ids"][row, :len(ids)] = ids
            x["padding_mask"][row, :len(ids)] = 1
            y[row, first] = tag_ids[row][:len(first)]
            weights[row, first] = 1.0
            starts.append(first)
        return x, y, weights, starts

    def setup(self):
        import keras
        import keras_hub
        from nlpzoo.tasks.tagging.pipeline import encode_tags
        from nlpzoo.zoo.benchmarking.kerashub_models import kerashub_tagger

        keras.utils.set_random_seed(self.seed)
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor.from_preset(
            self.checkpoint)
        self.tokenizer, self.sequence_length = preprocessor.tokenizer, preprocessor.sequence_length
        backbone = keras_hub.models.BertBackbone.from_preset(self.checkpoint)
        self.model = kerashub_tagger(backbone, len(self.labels), backbone.dropout)
        self.x, self.y, self.weights, _ = self._arrays(self.train,
                                                       encode_tags(self.train, self.labels))
        dummy = [[0] * len(s.words) for s in self.validation]
        self.validation_x, _, _, self.validation_starts = self._arrays(self.validation, dummy)
        steps_per_epoch = -(-len(self.train) // self.batch_size)
        compile_with_schedule(self.model, self.optimizer_settings, steps_per_epoch,
                              self.jit_compile)

    def train_epoch(self, epoch):
        self.model.fit(self.x, self.y, sample_weight=self.weights, batch_size=self.batch_size,
                       epochs=1, verbose=0, shuffle=True)

    def evaluate(self):
        logits = self.model.predict(self.validation_x, batch_size=self.batch_size, verbose=0)
        tag_ids = np.argmax(logits, axis=-1)
        predicted = [[self.labels[t] for t in tag_ids[row, starts]]
                     for row, starts in enumerate(self.validation_starts)]
        return _entity_f1(self.validation, predicted)

    def describe(self):
        return {"batch_size": self.batch_size, "sequence_length": self.sequence_length,
                "optimizer": _optimizer_description(self.optimizer_settings)}


def _entity_f1(sentences, predicted):
    """Entity F1 (seqeval's default mode) of `predicted` tags; words a model cut off
    count as `O`."""
    from nlpzoo.tasks.tagging.metrics import entity_scores
    padded = [tags + ["O"] * (len(s.words) - len(tags)) for s, tags in zip(sentences, predicted)]
    return entity_scores([list(s.tags) for s in sentences], padded)["f1"]


def _optimizer_description(settings):
    return (f"AdamW (tasks.training.optimization.create_optimizer), learning rate "
            f"{settings['learning_rate']:g}, warm-up {settings['warmup_fraction']:g} then linear "
            f"decay over {settings['epochs']} epochs")


# === The length-sorted expert peer ===

class _Expert:
    """KerasHub's backbone fed our subwords (of `make_preprocessor()`, the task's own
    preprocessor) in length-sorted batches padded to a
    multiple of 8 (`padded_batches.length_sorted_batches`), shuffled each epoch;
    AdamW at ours' encoder rate with ours' schedule (one rate for every weight, as
    in `--what=finetune`). Subclasses say how to encode, which head, which metric."""

    def __init__(self, make_preprocessor, checkpoint, train, validation, labels, batch_size,
                 optimizer_settings, jit_compile, seed):
        self.make_preprocessor, self.checkpoint = make_preprocessor, checkpoint
        self.train, self.validation, self.labels = train, validation, labels
        self.batch_size, self.optimizer_settings = batch_size, optimizer_settings
        self.jit_compile, self.seed = jit_compile, seed

    def setup(self):
        import keras
        import keras_hub
        import tensorflow as tf
        from nlpzoo.zoo.benchmarking.padded_batches import length_sorted_batches

        keras.utils.set_random_seed(self.seed)
        self.rng = np.random.default_rng(self.seed)
        self.preprocessor = self.make_preprocessor()  # our tokenizer, loaded on the clock
        backbone = keras_hub.models.BertBackbone.from_preset(self.checkpoint)
        self.model = self.head(backbone)
        max_length = backbone.max_sequence_length
        token_ids, starts, targets = self.encode(self.train, training=True)
        self.batches = length_sorted_batches(token_ids, starts, targets, self.batch_size,
                                             EXPERT_PAD_MULTIPLE, max_length)
        token_ids, self.validation_starts, targets = self.encode(self.validation, training=False)
        self.validation_batches = length_sorted_batches(
            token_ids, self.validation_starts, targets, self.batch_size, EXPERT_PAD_MULTIPLE,
            max_length)
        self.spec = ({name: tf.TensorSpec([None, None], tf.int32) for name in self.batches[0][0]},
                     self.target_spec(), self.weight_spec())
        compile_with_schedule(self.model, self.optimizer_settings, len(self.batches),
                              self.jit_compile)

    def train_epoch(self, epoch):
        import tensorflow as tf
        order = self.rng.permutation(len(self.batches))
        dataset = tf.data.Dataset.from_generator(
            lambda: (self.batch(self.batches[i]) for i in order), output_signature=self.spec)
        self.model.fit(dataset, epochs=1, verbose=0, shuffle=False)

    def describe(self):
        return {"batch_size": self.batch_size,
                "max_seq_length": self.preprocessor.max_seq_length,
                "pad_multiple": EXPERT_PAD_MULTIPLE,
                "optimizer": _optimizer_description(self.optimizer_settings)}


class ExpertTagger(_Expert):
    """The expert peer on tagging: a Dense over every subword, the loss at first subwords."""

    def head(self, backbone):
        from nlpzoo.zoo.benchmarking.kerashub_models import kerashub_tagger
        return kerashub_tagger(backbone, len(self.labels), backbone.dropout)

    def encode(self, sentences, training):
        from nlpzoo.tasks.tagging.pipeline import encode_tags
        from nlpzoo.zoo.benchmarking.kerashub_models import encode_words
        token_ids, starts = encode_words(self.preprocessor, sentences)
        tags = (encode_tags(sentences, self.labels) if training
                else [[0] * len(s) for s in starts])
        return token_ids, starts, tags

    def target_spec(self):
        import tensorflow as tf
        return tf.TensorSpec([None, None], tf.int32)

    def weight_spec(self):
        import tensorflow as tf
        return tf.TensorSpec([None, None], tf.float32)

    def batch(self, batch):
        return batch[:3]

    def evaluate(self):
        predicted = [None] * len(self.validation)
        for x, _, _, rows in self.validation_batches:
            tag_ids = np.argmax(self.model.predict_on_batch(x), axis=-1)
            for row, i in enumerate(rows):
                predicted[i] = [self.labels[t] for t in tag_ids[row, self.validation_starts[i]]]
        return _entity_f1(self.validation, predicted)


class ExpertClassifier(_Expert):
    """The expert peer on classification: pooled output → dropout → Dense (the head of
    `BertTextClassifier`). Each text's label rides at position 0 of
    `length_sorted_batches`' per-token targets (its `[CLS]`), read back from there."""

    def head(self, backbone):
        from nlpzoo.zoo.benchmarking.kerashub_models import kerashub_classifier
        return kerashub_classifier(backbone, len(self.labels), backbone.dropout)

    def encode(self, examples, training):
        from nlpzoo.zoo.benchmarking.kerashub_models import encode_texts
        ids = {label: i for i, label in enumerate(self.labels)}
        token_ids = encode_texts(self.preprocessor, [example.text for example in examples])
        return token_ids, [[0]] * len(examples), [[ids[example.label]] for example in examples]

    def target_spec(self):
        import tensorflow as tf
        return tf.TensorSpec([None], tf.int32)

    def weight_spec(self):
        import tensorflow as tf
        return tf.TensorSpec([None], tf.float32)

    def batch(self, batch):
        x, y, weight, _ = batch
        return x, y[:, 0], weight[:, 0]

    def evaluate(self):
        correct = total = 0
        for x, y, _, _ in self.validation_batches:
            predicted = np.argmax(self.model.predict_on_batch(x), axis=-1)
            correct += int((predicted == y[:, 0]).sum())
            total += len(predicted)
        return correct / total


# === One task's race ===

def run_task(name, contenders, target, metric, max_epochs, **fields):
    """Races `contenders` ({"ours": …, "expert": …, "kerashub_recipe": …}, built lazily:
    each a function that returns the contender) in turn; the task's record with both
    ratios. `fields` (data sizes, paths) go into the record as they are."""
    results = {}
    for contender_name, make in contenders.items():
        contender = make()
        results[contender_name] = race(contender, target, max_epochs)
        del contender
        _release()
    record = {"task": name, "metric": metric, "target": target, "max_epochs": max_epochs,
              **fields, "contenders": results}
    for other in ("kerashub_recipe", "expert"):
        if other in results and "ours" in results:
            ratio, at_least = time_ratios(results[other], results["ours"])
            record[f"{other}_ratio"] = ratio
            record[f"{other}_ratio_at_least"] = at_least
    return record
