"""Trackers: the run's events mirrored to TensorBoard, Weights & Biases and MLflow
(`--log-to`, SEXPGPU_LOG_TO). events.jsonl stays the source of truth; a background
thread feeds the sinks, so a slow or failing one never slows or fails the run."""
