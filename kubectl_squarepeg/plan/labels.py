"""The labels squarepeg puts on what it creates: the one place their names are spelled.

They are squarepeg's contract with the cluster (docs/labels.md): the sweep, `ps`, `rm` and
the runner find a run again by them, so a name changed here changes what every later run
recognises. Kept apart from plan/manifest.py, and free of imports, so that the modules that
only read labels (run/sweep.py, run/listing.py, run/runner.py) do not load the manifest
builder and its chain at start-up.
"""

from __future__ import annotations

from typing import Final

MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "squarepeg"
MANAGED_BY_SELECTOR: Final = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
# Every label below starts with this prefix, which the user's own `-l` may not use.
SQUAREPEG_LABEL_PREFIX: Final = "squarepeg.io/"
RUN_ID_LABEL: Final = "squarepeg.io/run-id"
CREATED_BY_LABEL: Final = "squarepeg.io/created-by"
# Set by the second Ctrl-C's "keep it": the sweep never takes a resource that has it.
KEEP_LABEL: Final = "squarepeg.io/keep"
# On a `run -d`'s Pod or Job: it outlives the command that made it, and no sweep takes it
# (only `kubectl squarepeg rm`, or a Job's TTL with `-d --rm`): plan/detached.py.
DETACHED_LABEL: Final = "squarepeg.io/detached"
# An annotation, not a label: when the run that created a Pod or Job was last known alive
# (UTC, RFC 3339, renewed by the run: run/heartbeat.py). A running resource whose run has
# been silent longer than orphan_sweep_silence is an orphan (run/orphans.py; decision 0350).
ALIVE_AT_ANNOTATION: Final = "squarepeg.io/alive-at"
# An annotation on a `run -d -p` Pod or Job: its -p, as `kubectl squarepeg port NAME`
# forwards them and `ps` shows them (plan/ports.py `recorded`; decision 0231).
PORTS_ANNOTATION: Final = "squarepeg.io/ports"
# Set by `kubectl squarepeg stop` before it lowers the pod's activeDeadlineSeconds (UTC, RFC
# 3339): the DeadlineExceeded that follows was the user's stop, and the run's exit code is
# the container's own (143, 137 or a trap's), not 124 (decision 0370).
STOPPED_AT_ANNOTATION: Final = "squarepeg.io/stopped-at"
