"""Training machinery: optimizers and schedules, L2-SP, unfreezing, callbacks, training state, distribution, multi-task sampling, TensorBoard writers."""
