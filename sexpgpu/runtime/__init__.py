"""The training runtime: run settings, the TrainingProgram interface, run directories,
events, status, checkpoints, signals and the loop that ties them together."""
