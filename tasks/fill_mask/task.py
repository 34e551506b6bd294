"""Fill-mask as a `Task`: text with [MASK] tokens in, the likeliest tokens for each out."""

import dataclasses
import json

from nlpzoo.tasks.fill_mask.evaluation import masked_evaluation_dataset, masked_lm_scores
from nlpzoo.tasks.fill_mask.model import FillMaskModel
from nlpzoo.tasks.fill_mask.predictions import predict_top_k, prediction_record
from nlpzoo.tasks.fill_mask.preprocessor import FillMaskPreprocessor
from nlpzoo.tasks.fill_mask.serving import fill_mask_outputs
from nlpzoo.tasks.registry import register_task
from nlpzoo.tasks.text.sentences import FORMATS, Sentence, read_sentences
from nlpzoo.tasks.task import Task
from nlpzoo.tasks.text.prediction_io import write_output


@dataclasses.dataclass(frozen=True)
class FillMaskOptions:
    """The options of `FillMaskTask`.

    Attributes:
        top_k: tokens proposed per mask, best first (at most the tokens a
            mask may take: `vocabulary_filter.proposable_k`).
        allow_continuations: also propose `##` pieces for a mask that starts
            a word (by default only a mask glued to the letters before it
            may take one; see `vocabulary_filter`).
        mask_rate: evaluation: the share of word pieces masked.
        mask_seed: evaluation: the seed of the (fixed) masking.
    """

    top_k: int = 5
    allow_continuations: bool = False
    mask_rate: float = 0.15
    mask_seed: int = 0

    def __post_init__(self):
        if int(self.top_k) < 1:
            raise ValueError(f"top_k must be at least 1, got {self.top_k}")
        if not 0.0 < float(self.mask_rate) <= 1.0:
            raise ValueError(f"mask_rate must be in (0, 1], got {self.mask_rate}")


@register_task
class FillMaskTask(Task):
    """The tokens a pretrained encoder and its masked-LM head put in place of [MASK].

    The model is a `FillMaskModel`: the encoder and BERT's masked-LM head,
    both from a checkpoint that has the head (a Hugging Face
    `BertForMaskedLM` / `BertForPreTraining` directory, or one of ours written
    by tools/pretrain.py, which keeps the head beside the encoder); a
    checkpoint without one (a sentence-transformers model such as
    all-MiniLM-L6-v2) is refused (`pretrained_heads`). Nothing trains:
    `trainable` is False.

    Prediction: texts (one per line, or JSON lines with "text") with one or
    more [MASK] tokens; for each mask the `top_k` tokens, best first, with
    their probability (the softmax over the vocabulary at that position),
    never a special token, and no `##` piece for a mask that starts a word
    unless `allow_continuations` (`vocabulary_filter`); plus `sequence`, the
    text with each mask's best token. A text without a mask is an error.
    Evaluation: plain text masked by a fixed, seeded rule, scored by top-1
    and top-5 accuracy and perplexity (`evaluation`). Serving: `text` →
    `token`, `token_id`, `probability`, `num_masks` (`serving`).

    Examples:
    >>> task = FillMaskTask(top_k=3)
    >>> task.trainable, task.pretrained_heads, task.options.top_k
    (False, ('mlm_head',), 3)
    """

    name = "fill_mask"
    pipeline_tag = "fill-mask"
    formats = FORMATS
    Options = FillMaskOptions
    preprocessor_class = FillMaskPreprocessor
    trainable = False
    evaluates_without_labels = True
    pretrained_heads = ("mlm_head",)

    # === Data ===

    def read(self, path, data_format=None):
        return read_sentences(path, data_format)

    def label_names(self, examples):
        return []

    def texts(self, examples):
        return (example.text for example in examples)

    def make_dataset(self, examples, preprocessor, labels=(), batch_size=32, training=False,
                     seed=None):
        """The masked evaluation batches of `examples` (`evaluation.masked_evaluation_dataset`,
        keyed by the `mask_seed` option; `seed` is unused: the masks never change)."""
        if training:
            raise ValueError(f"the {self.name} task does not train")
        return masked_evaluation_dataset([example.text for example in examples],
                                         self.preprocessor_of(preprocessor),
                                         batch_size=batch_size, seed=self.options.mask_seed,
                                         mask_rate=self.options.mask_rate)

    # === Model ===

    def model_head_options(self, labels):
        return {}

    def build_model(self, encoder, dropout=None):
        """A `FillMaskModel` whose head starts at random (`dropout` is unused: nothing trains)."""
        return FillMaskModel(encoder)

    def monitor(self, num_classes):
        raise ValueError(f"the {self.name} task has no training and no validation metric")

    def evaluate(self, model, dataset, examples, labels):
        """Top-1 and top-5 accuracy, cross-entropy, perplexity and the masked tokens
        (`evaluation.masked_lm_scores`), and the number of texts."""
        return {**masked_lm_scores(model, dataset), "examples": len(examples)}

    # === Prediction ===

    def read_prediction_input(self, path, input_format="auto", data_format=None):
        return self.read(path, "text" if input_format == "text" else data_format)

    def raw_examples(self, inputs, targets=None, labels=None):
        if targets is not None:
            raise ValueError(f"a {self.name} model takes no targets: evaluate it on plain text "
                             "with tools/evaluate.py or task.evaluate")
        if not all(isinstance(text, str) for text in inputs):
            raise ValueError(f"a {self.name} model reads texts (strings with [MASK])")
        return [Sentence(text, "input", number) for number, text in enumerate(inputs, 1)]

    def predict_outputs(self, model, preprocessor, examples, labels, batch_size=32):
        return predict_top_k(model, self.preprocessor_of(preprocessor), examples,
                             self.options.top_k, self.options.allow_continuations, batch_size)

    def decode_predictions(self, examples, outputs, labels):
        """Per text: `text`, `sequence` and `masks` (`predictions.prediction_record`)."""
        return [prediction_record(example, *output) for example, output in zip(examples, outputs)]

    def write_predictions(self, model, preprocessor, examples, labels, output,
                          output_format="auto", batch_size=64):
        """JSON lines, one per text: `text`, `sequence` and `masks` (`prediction_record`)."""
        if output_format not in ("auto", "jsonl"):
            raise ValueError(f"fill-mask predictions are JSON lines, not {output_format}")
        preprocessor = self.preprocessor_of(preprocessor)
        outputs = self.predict_outputs(model, preprocessor, examples, labels, batch_size)
        records = self.decode_predictions(examples, outputs, labels)
        write_output(output, (json.dumps(record, ensure_ascii=False) + "\n"
                              for record in records))
        masks = sum(len(record["masks"]) for record in records)
        return f"{len(records)} texts ({masks} masks)"

    # === Serving ===

    def serving_outputs(self, model, preprocessor, labels, text):
        return fill_mask_outputs(model, self.preprocessor_of(preprocessor), text,
                                 self.options.top_k, self.options.allow_continuations)
