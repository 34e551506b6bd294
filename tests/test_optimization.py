import numpy as np
import pytest

from tasks.optimization import WarmupLinearDecay, create_optimizer


def test_schedule_shape():
    schedule = WarmupLinearDecay(2e-3, warmup_steps=4, total_steps=12)
    rates = [float(schedule(step)) for step in range(14)]
    expected = [2e-3 * s / 4 for s in range(4)] + [2e-3 * (12 - s) / 8 for s in range(4, 12)] + [0, 0]
    np.testing.assert_allclose(rates, expected, atol=1e-9)
    assert WarmupLinearDecay.from_config(schedule.get_config()).get_config() == schedule.get_config()


def test_schedule_rejects_bad_steps():
    with pytest.raises(ValueError):
        WarmupLinearDecay(1e-3, warmup_steps=5, total_steps=4)


def test_no_weight_decay_on_bias_and_layer_norm():
    import keras
    optimizer = create_optimizer(1e-3, total_steps=10)
    dense = keras.layers.Dense(2)
    norm = keras.layers.LayerNormalization()
    dense.build((None, 2))
    norm.build((None, 2))
    for variable in dense.weights + norm.weights:
        excluded = optimizer._use_weight_decay(variable) is False
        assert excluded == (variable.name in ("bias", "gamma", "beta")), variable.name
