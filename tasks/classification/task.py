"""What the training binaries need to know about classification, in one place."""

from tasks.classification import readers
from tasks.classification.pipeline import make_dataset


class ClassificationTask:
    """Single-text and text-pair classification (TREC, MRPC, JSONL).

    Examples:
    >>> ClassificationTask().monitor(num_labels=2)
    ('val_f1', 'max')
    """

    name = "classification"
    formats = readers.FORMATS

    def read(self, path, data_format=None):
        return readers.read_examples(path, data_format)

    def label_names(self, examples):
        """Labels in a stable order: sorted, numerically when all are integers."""
        labels = {example.label for example in examples}
        if all(label.lstrip("-").isdigit() for label in labels):
            return sorted(labels, key=int)
        return sorted(labels)

    def texts(self, examples):
        """Every text of `examples`, for learning a vocabulary."""
        for example in examples:
            yield example.text
            if example.text_pair is not None:
                yield example.text_pair

    def tag_scheme(self, examples):
        return None

    def preset_for(self, encoder_preset, examples, head=None):
        paired = examples[0].text_pair is not None
        return f"{encoder_preset}_{'pair_' if paired else ''}classifier"

    def make_dataset(self, examples, tokenizer, label_names, **options):
        return make_dataset(examples, tokenizer, label_names, **options)

    def callbacks(self, eval_dataset, eval_examples, label_names):
        return []

    def evaluate(self, model, dataset, examples, label_names):
        metrics = model.evaluate(dataset, return_dict=True, verbose=0)
        metrics = {name: float(value) for name, value in metrics.items()}
        metrics["examples"] = len(examples)
        return metrics

    def monitor(self, num_labels):
        """The validation metric that picks the best model."""
        return ("val_f1", "max") if num_labels == 2 else ("val_accuracy", "max")
