"""What the training binaries need to know about span NER, in one place."""

from tasks.span_ner import readers
from tasks.span_ner.evaluation import SpanF1Callback, evaluate_span_model
from tasks.span_ner.pipeline import make_dataset

DECODINGS = ("flat", "nested")


class SpanNERTask:
    """Span-based NER from BIO column files or JSONL with (possibly nested) spans.

    Args:
        max_span_width: the widest span the model scores, in words.
        decoding: "flat" (non-overlapping entities) or "nested".
        flat_method: "greedy" or "exact" (weighted interval scheduling).
        threshold: minimum best non-NONE probability of an entity (see
            `tools/calibrate.py`).

    Examples:
    >>> SpanNERTask().monitor(num_labels=5)
    ('val_span_f1', 'max')
    """

    name = "span_ner"
    formats = readers.DATA_FORMATS

    def __init__(self, max_span_width=10, decoding="flat", flat_method="greedy",
                 threshold=0.5):
        if decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {DECODINGS}, got {decoding!r}")
        self.max_span_width = int(max_span_width)
        self.decoding = decoding
        self.flat_method = flat_method
        self.threshold = float(threshold)

    def options(self):
        return {"max_span_width": self.max_span_width, "decoding": self.decoding,
                "flat_method": self.flat_method, "threshold": self.threshold}

    def read(self, path, data_format=None):
        return readers.read_span_file(path, data_format)

    def label_names(self, sentences):
        return readers.span_label_names(sentences)

    def tag_scheme(self, sentences):
        return None

    def texts(self, sentences):
        for sentence in sentences:
            yield " ".join(sentence.words)

    def preset_for(self, encoder_preset, sentences, head=None):
        return f"{encoder_preset}_span_ner"

    def make_dataset(self, sentences, tokenizer, label_names, **options):
        return make_dataset(sentences, tokenizer, label_names,
                            max_span_width=self.max_span_width, **options)

    def monitor(self, num_labels):
        return ("val_span_f1", "max")

    def _decoding_options(self):
        return dict(max_span_width=self.max_span_width, threshold=self.threshold,
                    decoding=self.decoding, method=self.flat_method)

    def callbacks(self, eval_dataset, eval_sentences, label_names):
        return [SpanF1Callback(eval_dataset, eval_sentences, label_names,
                               **self._decoding_options())]

    def evaluate(self, model, dataset, sentences, label_names):
        return evaluate_span_model(model, dataset, sentences, label_names,
                                   **self._decoding_options())
