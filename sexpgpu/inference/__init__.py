"""Using a finished run: its forward alone (`load_run`, `sample`, `predict`) and its
parameters written for other frameworks (`export`)."""
