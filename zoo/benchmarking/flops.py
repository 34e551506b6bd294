"""FLOP counts for `tools/benchmark.py`: a BERT encoder's parameters, FLOPs per token, MFU.

Pure arithmetic, no absl flags and no TensorFlow, so tests import it.

The model FLOPs per token follow Kaplan et al. (2020) and the PaLM paper's
MFU (Chowdhery et al. 2022, appendix B): a training step costs about
6 × N + 12 × L × T × H per token, N being the non-embedding parameters
(2N multiply-adds forward, twice that backward) and 12·L·T·H the attention
scores and their weighted sum (QKᵀ and AV, forward and backward) over a
sequence of T tokens. A forward pass alone (prediction) is a third of that.
Embedding lookups are gathers, not matmuls: they are left out.
"""

import statistics


def encoder_parameters(num_layers, hidden_dim, intermediate_dim, vocabulary_size,
                       max_sequence_length, num_segments=2):
    """The parameters of a post-LayerNorm BERT encoder, split into embeddings and the rest.

    `embedding` counts the token, position and segment tables; `non_embedding`
    everything else: per block the query, key, value and output projections
    (4·(H² + H)), the feed-forward layers (2·H·I + I + H) and two LayerNorms
    (4·H); the embeddings' LayerNorm (2·H); the pooler (H² + H).

    Examples:
    >>> parameters = encoder_parameters(2, 128, 512, 1000, 512)  # bert_tiny, 1000 tokens
    >>> parameters["embedding"], parameters["non_embedding"]
    (193792, 413312)
    """
    for name, value in (("num_layers", num_layers), ("hidden_dim", hidden_dim),
                        ("intermediate_dim", intermediate_dim),
                        ("vocabulary_size", vocabulary_size),
                        ("max_sequence_length", max_sequence_length),
                        ("num_segments", num_segments)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    h, i = hidden_dim, intermediate_dim
    block = 4 * (h * h + h) + (2 * h * i + i + h) + 4 * h
    return {
        "embedding": (vocabulary_size + max_sequence_length + num_segments) * h,
        "non_embedding": num_layers * block + 2 * h + (h * h + h),
    }


def training_flops_per_token(non_embedding_parameters, num_layers, sequence_length,
                             hidden_dim):
    """6·N + 12·L·T·H: the FLOPs of one training step, per token.

    Examples:
    >>> training_flops_per_token(1000, num_layers=2, sequence_length=16, hidden_dim=8)
    9072
    """
    return 6 * non_embedding_parameters + 12 * num_layers * sequence_length * hidden_dim


def predict_flops_per_token(non_embedding_parameters, num_layers, sequence_length, hidden_dim):
    """A forward pass alone: a third of `training_flops_per_token` (2·N + 4·L·T·H).

    Examples:
    >>> predict_flops_per_token(1000, num_layers=2, sequence_length=16, hidden_dim=8)
    3024
    """
    return 2 * non_embedding_parameters + 4 * num_layers * sequence_length * hidden_dim


def matmul_flops(size):
    """FLOPs of a [size, size] @ [size, size] matmul: 2·size³ (a multiply and an add each).

    Examples:
    >>> matmul_flops(2048) / 1e9
    17.179869184
    """
    return 2 * size ** 3


def model_flops_utilization(tokens_per_second, flops_per_token, peak_gflops):
    """Achieved model FLOP/s over a measured peak (GFLOP/s), as a fraction.

    Examples:
    >>> model_flops_utilization(2_000_000, 4_500, peak_gflops=18.0)  # 9 of 18 GFLOP/s
    0.5
    """
    if peak_gflops <= 0:
        raise ValueError(f"peak_gflops must be positive, got {peak_gflops!r}")
    return tokens_per_second * flops_per_token / (peak_gflops * 1e9)


def summary(values):
    """{median, min, max} of a list of figures (tokens/s of the timed windows).

    Examples:
    >>> summary([3.0, 1.0, 2.0, 10.0])
    {'median': 2.5, 'min': 1.0, 'max': 10.0}
    """
    if not values:
        raise ValueError("no figures to summarise")
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}
