"""Task families: readers, tf.data pipelines, heads, losses, metrics, decoding."""
