"""Data for training runs: sources (mnist1d, npy/npz, token and text files,
synthetic tasks) and the loaders that batch them deterministically."""
