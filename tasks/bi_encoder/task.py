"""Sentence-BERT bi-encoder training on text pairs as a `Task`."""

import dataclasses
import json

import numpy as np
import tensorflow as tf
from absl import flags

from nlpzoo.layers import POOLINGS
from nlpzoo.tasks.bi_encoder import readers
from nlpzoo.tasks.modeling.correlation import correlations
from nlpzoo.tasks.bi_encoder.model import (
    OBJECTIVES,
    BiEncoder,
    bi_encoder_loss,
    bi_encoder_metrics,
)
from nlpzoo.tasks.bi_encoder.pipeline import make_dataset
from nlpzoo.tasks.bi_encoder.predictions import predict_pairs, prediction_records
from nlpzoo.tasks.bi_encoder.serving import bi_encoder_outputs
from nlpzoo.tasks.modeling.class_metrics import classification_monitor
from nlpzoo.tasks.modeling.objective_flag import define_objective_flag
from nlpzoo.tasks.modeling.pooling_flag import define_pooling_flag
from nlpzoo.tasks.io.errors import DataFormatError
from nlpzoo.tasks.text.labels import sorted_label_names
from nlpzoo.tasks.text.prediction_io import looks_like_jsonl, write_output
from nlpzoo.tasks.io.progress import ProgressCallback, track
from nlpzoo.tasks.registry import register_task
from nlpzoo.tasks.retrieval import (
    CUTOFFS,
    embed_texts,
    pairs_as_retrieval,
    rank_and_score,
    read_corpus,
    read_queries,
)
from nlpzoo.tasks.task import Task


@dataclasses.dataclass(frozen=True)
class BiEncoderOptions:
    """objective: "softmax" (classes over (u, v, |u − v|)), "cosine" (cos(u, v)
    regressed on a score in [-1, 1]) or "multiple_negatives" (in-batch
    negatives, `ranking_loss`). pooling: how a text's token vectors become
    its sentence vector ("mean", "cls" or "max"). multiple_negatives only:
    ranking_scale (the cosines' inverse temperature, 20), symmetric_ranking
    (also positive → anchor) and hard_negatives (a third tower; set from the
    training data by `adapt`)."""

    objective: str = "softmax"
    pooling: str = "mean"
    ranking_scale: float = 20.0
    symmetric_ranking: bool = False
    hard_negatives: bool = False

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, "
                             f"got {self.objective!r}")
        if self.ranking_scale <= 0:
            raise ValueError(f"ranking_scale must be positive, got {self.ranking_scale}")
        if self.hard_negatives and self.objective != "multiple_negatives":
            raise ValueError("hard negatives are read by the multiple_negatives objective "
                             f"only, not by {self.objective}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)} for the "
                             f"bi-encoder, got {self.pooling!r}")


@register_task
class BiEncoderTask(Task):
    """A Sentence-BERT bi-encoder trained on text pairs (MRPC TSV, JSONL).

    One encoder with one set of weights reads each text of a pair alone and
    pools it into a sentence vector (`BiEncoder`); the `softmax` objective
    classifies the pair from (u, v, |u − v|), the `cosine` objective
    regresses cos(u, v) on a graded score, the `multiple_negatives`
    objective ranks each anchor's positive above the batch's other positives
    (see `tasks.bi_encoder.readers` for the data). The best model has the
    highest validation F1 of class 1 (softmax, two classes; accuracy
    otherwise), Spearman correlation of cosine and score (cosine), or MRR@10
    of each validation anchor retrieving its positive among all validation
    positives (multiple_negatives). Predictions are JSONL with the cosine of each
    pair, and the label with its probability (softmax); the exported model
    also serves both sentence vectors.

    Examples:
    >>> BiEncoderTask().monitor(num_classes=2)
    ('val_f1', 'max')
    >>> BiEncoderTask(objective="cosine").monitor(num_classes=0)
    ('val_spearman', 'max')
    >>> BiEncoderTask(objective="multiple_negatives").monitor(num_classes=0)
    ('val_mrr_at_10', 'max')
    """

    name = "bi_encoder"
    pipeline_tag = "sentence-similarity"
    formats = readers.FORMATS
    Options = BiEncoderOptions
    head_options = ("num_classes", "labels")

    @classmethod
    def define_flags(cls, flag_values):
        define_objective_flag(flag_values)
        define_pooling_flag(flag_values)
        flags.DEFINE_float("ranking_scale", 20.0, "--objective=multiple_negatives: the "
                           "cosines are multiplied by this before the softmax over the "
                           "batch (sentence-transformers: 20).", lower_bound=0.0,
                           flag_values=flag_values)
        flags.DEFINE_boolean("symmetric_ranking", False, "--objective=multiple_negatives: "
                             "average with the loss of each positive picking its anchor "
                             "among the batch's anchors.", flag_values=flag_values)

    @classmethod
    def options_from_flags(cls, flag_values):
        return {"objective": flag_values.objective or "softmax",
                "pooling": flag_values.pooling or "mean",
                "ranking_scale": flag_values.ranking_scale,
                "symmetric_ranking": flag_values.symmetric_ranking}, {}

    @property
    def logged_metrics(self):
        """Correlations of the cosine objective (Keras cannot compute them batch by batch);
        the retrieval figures of multiple_negatives."""
        if self.options.objective == "multiple_negatives":
            return tuple(CUTOFFS)
        return ("spearman", "pearson") if self.options.objective == "cosine" else ()

    def adapt(self, examples):
        """multiple_negatives: a third tower for hard negatives when any training pair has one."""
        if self.options.objective != "multiple_negatives":
            return self
        return self.with_options(hard_negatives=any(
            getattr(example, "hard_negative", None) for example in examples))

    # === Data ===

    def read(self, path, data_format=None, columns=None):
        """Text pairs of an MRPC, CSV/TSV or JSONL file; `columns` (a
        `tasks.text.columns.Columns`) names a CSV/TSV/JSONL file's columns."""
        return readers.read_pairs(path, data_format, self.options.objective, columns=columns)

    def label_names(self, examples):
        """Softmax: the classes, sorted (numerically when all are integers); cosine and
        multiple_negatives: none."""
        if self.options.objective != "softmax":
            return []
        return sorted_label_names(example.label for example in examples)

    def texts(self, examples):
        for example in examples:
            yield example.text
            yield example.text_pair

    def make_dataset(self, examples, preprocessor, labels, batch_size=32, training=False,
                     seed=None):
        return make_dataset(examples, preprocessor, labels, objective=self.options.objective,
                            batch_size=batch_size, training=training, seed=seed,
                            hard_negatives=self.options.hard_negatives)

    # === Model ===

    def model_head_options(self, labels):
        return {"num_classes": len(labels)} if self.options.objective == "softmax" else {}

    def build_model(self, encoder, num_classes=2, labels=None, dropout=0.1):
        if labels is not None:
            num_classes = len(labels)
        return BiEncoder(encoder, objective=self.options.objective, num_classes=num_classes,
                         pooling=self.options.pooling, dropout=dropout,
                         hard_negatives=self.options.hard_negatives, name="bi_encoder")

    def loss(self):
        return bi_encoder_loss(self.options.objective, self.options.ranking_scale,
                               self.options.symmetric_ranking)

    def metrics(self, model):
        return bi_encoder_metrics(self.options.objective, model.num_classes)

    def monitor(self, num_classes):
        if self.options.objective == "multiple_negatives":
            return ("val_mrr_at_10", "max")
        if self.options.objective == "cosine":
            return ("val_spearman", "max")
        return classification_monitor(num_classes)

    def evaluate(self, model, dataset, examples, labels):
        """Softmax: loss, accuracy (and F1); cosine: the mean squared error and the Pearson
        and Spearman correlations of cosine and score; multiple_negatives: retrieval over
        the pairs (`pair_retrieval`)."""
        if self.options.objective == "softmax":
            return super().evaluate(model, dataset, examples, labels)
        if self.options.objective == "multiple_negatives":
            return self.pair_retrieval(model, dataset, examples)
        cosines = np.asarray(model.predict(dataset, verbose=0, callbacks=[
            ProgressCallback("predicting")]), np.float64).reshape(-1)
        scores = np.asarray([readers.score_of(example) for example in examples])
        return {"mse": float(np.mean((cosines - scores) ** 2)),
                **correlations(cosines, scores, "cosines"), "examples": len(examples)}

    def pair_retrieval(self, model, dataset, examples):
        """MRR@10, Recall@1/10 and NDCG@10 of every distinct anchor retrieving its positive(s)
        among all distinct positives of `examples` (`retrieval.pairs_as_retrieval`), with
        the vectors of `dataset` (in the order of `examples`)."""
        run = tf.function(lambda features: model.pair_outputs(features, training=False),
                          reduce_retracing=True)
        anchors, positives = [], []
        for features, _ in track(dataset, "ranking"):
            outputs = run(features)
            anchors.append(np.asarray(outputs["embedding"], np.float32))
            positives.append(np.asarray(outputs["pair_embedding"], np.float32))
        anchors, positives = np.concatenate(anchors), np.concatenate(positives)
        query_texts, document_texts, relevant = pairs_as_retrieval(
            [e.text for e in examples], [e.text_pair for e in examples])
        first_row = {}  # the vector of a text is that of its first pair
        for row, example in enumerate(examples):
            first_row.setdefault(("anchor", example.text), row)
            first_row.setdefault(("positive", example.text_pair), row)
        scores = rank_and_score(anchors[[first_row["anchor", text] for text in query_texts]],
                                positives[[first_row["positive", text] for text in document_texts]],
                                relevant)
        scores["examples"] = len(examples)
        return scores

    def evaluate_corpus(self, model, preprocessor, queries_path, corpus_path, batch_size=64):
        """Retrieval metrics of the queries of `queries_path` searching the documents of
        `corpus_path` by the cosine of their vectors (`model.embed`; formats:
        `tasks.retrieval.corpus`)."""
        corpus = read_corpus(corpus_path)
        queries = read_queries(queries_path, corpus)
        preprocessor = self.preprocessor_of(preprocessor)
        documents = embed_texts(model.embed, preprocessor, [d.text for d in corpus], batch_size,
                                "embedding the corpus")
        vectors = embed_texts(model.embed, preprocessor, [q.text for q in queries], batch_size,
                              "embedding the queries")
        row_of = {document.id: row for row, document in enumerate(corpus)}
        return rank_and_score(vectors, documents,
                              [{row_of[i] for i in query.relevant} for query in queries])

    # === Prediction ===

    def read_prediction_input(self, path, input_format="auto", data_format=None):
        """A data file (MRPC, JSONL; labels optional and unused) or `text<TAB>text_pair`
        lines."""
        if input_format != "text" and looks_like_jsonl(path):  # whatever the training format
            return readers.read_pairs(path, "jsonl", self.options.objective, labeled=False)
        if input_format != "text":
            try:
                return readers.read_pairs(path, data_format, self.options.objective, labeled=False)
            except DataFormatError:
                if input_format == "data":
                    raise
        return readers.read_tab_separated_pairs(path)

    def write_predictions(self, model, preprocessor, examples, labels, output,
                          output_format="auto", batch_size=64):
        """JSONL: both texts, the cosine of their vectors and (softmax) the label, its
        probability and every class's probability."""
        outputs = predict_pairs(model, self.preprocessor_of(preprocessor), examples, labels,
                                self.options.objective, batch_size)
        write_output(output, [json.dumps(record, ensure_ascii=False) + "\n"
                              for record in prediction_records(examples, outputs, labels)])
        return f"{len(examples)} text pairs"

    # === Serving ===

    def serving_inputs(self):
        return ("text", "text_pair")

    def serving_outputs(self, model, preprocessor, labels, text, text_pair):
        return bi_encoder_outputs(model, preprocessor, labels, text, text_pair)

