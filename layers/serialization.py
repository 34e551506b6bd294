"""The package name under which every layer of ours is registered."""

import keras

PACKAGE = "nlpzoo"


def register(cls):
    """Registers `cls` with Keras so `.keras` files load with no `custom_objects`."""
    return keras.saving.register_keras_serializable(package=PACKAGE)(cls)
