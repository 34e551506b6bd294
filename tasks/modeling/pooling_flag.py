"""`--pooling`: how a text's vector is made from its token vectors, for every task that
pools one (classification, the bi-encoder), defined once whichever task comes first."""

from absl import flags

POOLINGS = ("pooler", "cls", "mean", "max")
POOLING_FLAG = "pooling"


def define_pooling_flag(flag_values):
    """Defines `--pooling` in `flag_values`, once for every task that pools a text's vector.

    Classification and the bi-encoder share the flag; absl refuses a second
    definition, so the first task to define it does and the others reuse it.
    It is None when omitted: each task then takes its own default.

    Examples:
    >>> values = flags.FlagValues()
    >>> define_pooling_flag(values); define_pooling_flag(values)
    >>> _ = values(["train"])
    >>> values.pooling is None
    True
    """
    if POOLING_FLAG in flag_values:
        return
    flags.DEFINE_enum(POOLING_FLAG, None, POOLINGS, "A text's vector: BERT's pooler output, "
                      "the [CLS] vector, or the mean or maximum over its tokens (mean: what "
                      "sentence-transformers checkpoints such as all-MiniLM-L6-v2 are "
                      "trained with). When omitted: pooler for classification, mean for "
                      "bi_encoder (which takes cls, mean or max).", flag_values=flag_values)
