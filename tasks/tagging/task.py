"""What the training binaries need to know about word tagging, in one place."""

from tasks.tagging import readers
from tasks.tagging.evaluation import EntityF1Callback, evaluate_tagger
from tasks.tagging.pipeline import make_dataset

FORMATS = ("conll", "columns")


class TaggingTask:
    """BIO tagging of words (CoNLL-2003 and two-column files), softmax or CRF head.

    Examples:
    >>> from tasks.tagging import TaggedSentence
    >>> TaggingTask().label_names([TaggedSentence(("Paris",), ("B-LOC",))])
    ['O', 'B-LOC', 'I-LOC']
    """

    name = "tagging"
    formats = FORMATS

    def __init__(self, convert_iob1=False, label_all_subwords=False):
        self.convert_iob1 = convert_iob1
        self.label_all_subwords = label_all_subwords

    def read(self, path, data_format=None):
        # Both formats: whitespace columns, word first, tag last.
        return readers.read_column_file(path, convert_iob1=self.convert_iob1)

    def label_names(self, sentences):
        """Every tag of the scheme for the entity types seen in training.

        A type seen only as B-x still gets I-x (and E-x, S-x under BIOES), so
        evaluation data may use any tag of a known type.
        """
        seen = readers.label_list(sentences)
        prefixes = "BIES" if self.tag_scheme(sentences) == "BIOES" else "BI"
        types = sorted({readers.split_tag(tag)[1] for tag in seen if tag != "O"})
        return ["O"] + [f"{prefix}-{entity_type}" for entity_type in types
                        for prefix in prefixes]

    def tag_scheme(self, sentences):
        return readers.detect_scheme(sentences)

    def texts(self, sentences):
        for sentence in sentences:
            yield " ".join(sentence.words)

    def preset_for(self, encoder_preset, sentences, head="crf"):
        return f"{encoder_preset}_{'crf_' if head == 'crf' else ''}tagger"

    def make_dataset(self, sentences, tokenizer, label_names, training=False, **options):
        return make_dataset(sentences, tokenizer, label_names, training=training,
                            label_all_subwords=self.label_all_subwords, **options)

    def monitor(self, num_labels):
        return ("val_entity_f1", "max")

    def callbacks(self, eval_dataset, eval_sentences, label_names):
        return [EntityF1Callback(eval_dataset, eval_sentences, label_names)]

    def evaluate(self, model, dataset, sentences, label_names):
        return evaluate_tagger(model, dataset, sentences, label_names)
