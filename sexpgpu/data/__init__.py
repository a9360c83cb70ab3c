"""Data for training runs: sources and the loaders that batch them deterministically.

`spec` holds what a defloader declares (LoaderSpec, StageSpec); `sources` opens a source
by name (`files` for npy/npz/tokens, `text`, `synthetic`, `mnist1d`) as a `dataset`
ArrayData or TokenData; `loader` batches one; `errors` is the E-DATA diagnostic.
"""
