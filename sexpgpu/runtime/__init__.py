"""The training runtime: run settings, the Program interface, run directories,
events, status, checkpoints, signals and the loop that ties them together."""
