"""The process exit codes every verb shares (docs/cli.md, "Streams and exit codes")."""

EXIT_OK = 0          # done; every target met where the verb checks them
EXIT_ERRORS = 1      # diagnostics in the user's input, or an internal error
EXIT_USAGE = 2       # the command line itself is malformed
EXIT_RUNTIME = 3     # a run failed while training (E-DATA, E-NONFINITE, ...)
EXIT_PREEMPTED = 75  # stopped by a signal; `--resume latest` continues (EX_TEMPFAIL)
