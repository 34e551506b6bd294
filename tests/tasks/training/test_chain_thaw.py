"""Chain-thaw (DeepMoji): exactly one part of the model changes at each stage, then all of it."""

import logging

import keras
import numpy as np
import pytest

from nlpzoo.tasks.training.chain_thaw import ChainThaw, default_chain_thaw_steps
from nlpzoo.zoo import build_model

EVERY_STEPS, BATCH, STEPS = 2, 4, 10
# What changes at each stage of a 2-block encoder, by path prefix.
HEAD = ("classification_head/",)
STAGES = [
    HEAD,
    ("transformer/block_1/", "transformer/pooler/"),
    ("transformer/block_0/",),
    ("transformer/embeddings/",),
    HEAD + ("transformer/",),
]
DESCRIPTIONS = ["head only (encoder frozen)", "block 1 and pooler only", "block 0 only",
                "embeddings only", "everything"]


def _model(**options):
    # No warm-up: a first step at learning rate 0 would change nothing.
    return build_model("bert_tiny_classifier", num_classes=3, vocabulary_size=60, num_layers=2,
                       dropout=0.0, learning_rate=1e-2, warmup_steps=0, **options)


def _data(steps, seed=0):
    rng = np.random.default_rng(seed)
    size = steps * BATCH
    features = {"token_ids": rng.integers(4, 60, (size, 12)).astype("int32"),
                "segment_ids": np.zeros((size, 12), "int32"),
                "padding_mask": np.ones((size, 12), "int32")}
    return features, rng.integers(0, 3, (size,)).astype("int32")


class _Recorder(keras.callbacks.Callback):
    """Test-only: at each batch's start (after ChainThaw), the step, the trainable variables
    and every weight; at the end of training, the weights again."""

    def __init__(self):
        super().__init__()
        self.trainable, self.weights_at = {}, {}

    def _snapshot(self):
        return {v.path: np.array(v) for v in self.model.trainable_variables
                + self.model.non_trainable_variables if "/" in v.path}

    def on_train_batch_begin(self, batch, logs=None):
        step = int(self.model.optimizer.iterations)
        self.trainable[step] = sorted(v.path for v in self.model.trainable_variables)
        self.weights_at[step] = self._snapshot()

    def on_train_end(self, logs=None):
        self.weights_at[int(self.model.optimizer.iterations)] = self._snapshot()


@pytest.mark.parametrize("jit_compile", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_each_stage_changes_exactly_its_part(jit_compile, caplog):
    model = _model(jit_compile=jit_compile)
    all_paths = sorted(v.path for v in model.trainable_variables)
    recorder = _Recorder()
    with caplog.at_level(logging.INFO):
        if jit_compile:  # one fit of 10 steps, over two epochs
            model.fit(*_data(STEPS // 2), epochs=2, batch_size=BATCH, shuffle=False,
                      verbose=0, callbacks=[ChainThaw(EVERY_STEPS), recorder])
        else:  # 5 steps, then 5 more with a fresh callback (as a resumed run): the second
            # fit starts at step 5, in stage 2 (block 0 alone), not in stage 0
            for seed in (0, 1):
                model.fit(*_data(STEPS // 2, seed), batch_size=BATCH, shuffle=False,
                          verbose=0, callbacks=[ChainThaw(EVERY_STEPS), recorder])
                assert sorted(v.path for v in model.trainable_variables) == all_paths
    assert model.jit_compile is jit_compile  # really compiled, not silently turned off

    assert sorted(recorder.trainable) == list(range(STEPS))
    for step in range(STEPS):
        stage = step // EVERY_STEPS
        expected = [p for p in all_paths if p.startswith(STAGES[stage])]
        assert recorder.trainable[step] == expected, step
        # weights_at[s] holds the weights before step s: what step s changed, exactly.
        changed = [p for p in all_paths if np.any(
            recorder.weights_at[step + 1][p] != recorder.weights_at[step][p])]
        assert changed == expected, (step, sorted(set(changed) ^ set(expected)))

    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("chain-")]
    expected_log = [f"chain-thaw: step {EVERY_STEPS * stage}, {text}"
                    for stage, text in enumerate(DESCRIPTIONS)]
    if not jit_compile:  # the second fit announces the stage it resumes in
        expected_log.insert(3, "chain-thaw: step 5, block 0 only")
    assert messages == expected_log


def test_the_last_stage_lasts_to_the_end():
    callback = ChainThaw(3, transformer=_model().encoder)
    assert [callback.stage(step) for step in (0, 2, 3, 12, 14, 15, 1000)] == [
        0, 0, 1, 4, 4, 4, 4]


def test_the_default_stage_length_leaves_half_the_run_to_the_whole_model():
    # MiniLM-L6 on TREC for 3 epochs: 465 steps; 8 single-part stages of 29 steps.
    assert default_chain_thaw_steps(465, num_blocks=6) == 29
    assert 8 * 29 <= 465 / 2
    assert default_chain_thaw_steps(3, num_blocks=6) == 1


def test_fit_must_start_with_a_trainable_model():
    model = _model(freeze_encoder=True)
    with pytest.raises(ValueError, match="start fit with a trainable encoder"):
        model.fit(*_data(2), batch_size=BATCH, verbose=0, callbacks=[ChainThaw(1)])


def test_bad_every_steps():
    for every_steps in (0, -1, 1.5):
        with pytest.raises(ValueError, match="every_steps"):
            ChainThaw(every_steps)
