"""Several span NER models of one label set as one: their span probabilities averaged."""

from keras import ops

from nlpzoo.tasks.modeling.ensemble import Ensemble, mean_log_probabilities


class SpanEnsemble(Ensemble):
    """`SpanNER` models as one: like a `SpanNER`, `model(inputs)` gives logits (the log of
    the mean span probabilities) and `predict_on_batch` the mean probabilities
    [batch, T·L, classes], which the task then decodes once.

    Args:
        members: two or more `SpanNER` models with the same labels and `max_span_width`.
    """

    def __init__(self, members, **kwargs):
        super().__init__(members, mean_log_probabilities, **kwargs)

    def predict_step(self, data):
        x = data[0] if isinstance(data, tuple) else data
        return ops.softmax(self(x, training=False), axis=-1)
