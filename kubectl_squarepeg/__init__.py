"""kubectl-squarepeg: run one container on a cluster and get its output and exit code back.

This package module owns only the version string; everything else is imported lazily by
the command that needs it, so `--help` and `--version` stay fast.
"""

__version__ = "0.1.0"
