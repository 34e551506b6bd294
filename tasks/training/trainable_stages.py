"""What trains changes with the optimizer step: the mechanism gradual unfreezing and chain-thaw share.

A `TrainableStages` callback reads the global step at every batch, maps it to
a stage, and sets each variable's `trainable` flag to what that stage
trains; when the trainable set changes, the train step is traced again. A
subclass says only which variables it controls, the stage of a step, and
what each stage trains (`tasks/training/gradual_unfreezing.py`,
`tasks/training/chain_thaw.py`).
"""

import logging

import keras

from nlpzoo.layers.keras_internals import is_built_for


class TrainableStages(keras.callbacks.Callback):
    """Keras callback: sets which variables train from the global step, stage by stage.

    The stage is read from the optimizer's iteration count at every batch
    (`model.optimizer.iterations`), so a resumed run (whose training state
    restores the count) lands in the right stage. Under gradient accumulation
    the count is of updates: a stage starts with the first batch of an
    update, never in the middle of one. With `steps_per_execution` > 1 a
    stage starts at the first execution that begins at or after its step.

    How: the flag of each controlled variable (`variable.trainable`, not
    `layer.trainable`, so Keras's compiled trainable state is untouched);
    when the trainable set changes the train step is traced again
    (`make_train_function(force=True)`), under XLA if the model compiles
    with it. The TensorFlow trainer looks the train function up at every
    step, so the next step takes it.

    The optimizer holds slots only for the variables it was built for, so
    `fit` must start with every controlled variable trainable: at the start of
    training the callback builds the optimizer for `model.trainable_variables`
    if Keras has not yet (without a distribution strategy Keras would build it
    in the first step, for the first stage's variables alone), checks that it
    tracks every controlled variable, and sets the first batch's stage. At the
    end of training every flag is put back as it was at the start.

    Note: a frozen variable's Adam moments stay as they were, while Adam's
    bias correction follows the global step, not the variable's own count:
    just after a variable starts to train, a steady gradient moves it by up
    to about 6× the learning rate for some steps, where a fresh Adam moves by
    1×. A warm-up per stage is not part of this callback.

    Subclasses define `controlled_variables()`, `stage(step)`,
    `trainable_at(stage)` and `describe(stage)`, and `log_name`.

    Examples:
    >>> class EveryOtherStep(TrainableStages):
    ...     log_name = "every other step"
    ...     def controlled_variables(self):
    ...         return self.model.trainable_variables
    ...     def stage(self, step):
    ...         return step % 2
    ...     def trainable_at(self, stage):
    ...         return self.model_variables if stage else []
    ...     def describe(self, stage):
    ...         return "all" if stage else "none"
    >>> EveryOtherStep().stage(3)
    1
    """

    log_name = "staged training"

    def __init__(self):
        super().__init__()
        self._flags_at_start = None
        self._stage = None

    # -- what a subclass says ---------------------------------------------------------
    def controlled_variables(self):
        """The variables whose flags the stages set (called at the start of training)."""
        raise NotImplementedError

    def stage(self, step):
        """The stage at global step `step`."""
        raise NotImplementedError

    def trainable_at(self, stage):
        """The controlled variables that train at `stage` (the others are frozen)."""
        raise NotImplementedError

    def describe(self, stage):
        """What trains at `stage`, in words (the log line's text)."""
        raise NotImplementedError

    # -- the mechanism ----------------------------------------------------------------
    @property
    def model_variables(self):
        """Every controlled variable (once training has started)."""
        return [variable for variable, _ in self._flags_at_start or []]

    def on_train_begin(self, logs=None):
        variables = list(self.controlled_variables())
        if not self.model.optimizer.built:
            # Without a distribution strategy Keras's TF trainer builds the optimizer
            # lazily, in the first traced step, for the variables trainable *then*: after
            # the first batch has set its stage. Build it now, for all of them.
            self.model.optimizer.build(self.model.trainable_variables)
        optimizer = getattr(self.model.optimizer, "inner_optimizer", self.model.optimizer)
        # A variable the optimizer was not built for could never be trained at its stage.
        untracked = [v.path for v in variables if not is_built_for(optimizer, v)]
        if untracked:
            raise ValueError(
                f"{type(self).__name__}: the optimizer does not train {len(untracked)} "
                f"variables (e.g. {untracked[0]}): start fit with a trainable encoder (no "
                "freeze_encoder, no trainable=False); the callback freezes what each stage "
                "does not train")
        self._flags_at_start = [(v, v.trainable) for v in variables]
        self._stage = None

    def on_train_batch_begin(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        stage = self.stage(step)
        if stage == self._stage:
            return
        self._stage = stage
        trained = {id(v) for v in self.trainable_at(stage)}
        if self._set_flags({id(v): id(v) in trained for v, _ in self._flags_at_start}):
            self.model.make_train_function(force=True)
        logging.info("%s: step %d, %s", self.log_name, step, self.describe(stage))

    def on_train_end(self, logs=None):
        if self._flags_at_start is None:
            return
        if self._set_flags({id(v): flag for v, flag in self._flags_at_start}):
            # The last train function was traced for a partly frozen model: a later fit
            # without this callback must trace again.
            self.model.make_train_function(force=True)
        self._flags_at_start = None
        self._stage = None

    def _set_flags(self, flags):
        """Sets each controlled variable's trainable flag by id; True if any changed."""
        changed = False
        for variable, _ in self._flags_at_start:
            if variable.trainable != flags[id(variable)]:
                variable.trainable = flags[id(variable)]
                changed = True
        return changed


class PeriodicStages(TrainableStages):
    """A `TrainableStages` whose stage moves on every `every_steps` optimizer steps, over the
    parts of one transformer (gradual unfreezing, chain-thaw).

    Args:
        every_steps: the length of a stage, in optimizer steps (a whole number ≥ 1).
        transformer: the transformer whose parts the stages train; None: the model's.

    Examples:
    >>> PeriodicStages(every_steps=0)
    Traceback (most recent call last):
    ...
    ValueError: every_steps must be a whole number >= 1, got 0
    """

    def __init__(self, every_steps, transformer=None):
        super().__init__()
        if int(every_steps) != every_steps or every_steps < 1:
            raise ValueError(f"every_steps must be a whole number >= 1, got {every_steps}")
        self.every_steps = int(every_steps)
        self.transformer = transformer
        self._groups = None
