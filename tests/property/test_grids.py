"""Every option of `run` and every config key, crossed with every value of TRICKY.

Random cases rarely pair one flag with one of the ~90 tricky values (a 5,000-digit number
for --cpus, say: Python refuses to print such an int); these grids pair them all, in
process (harness.py), with the same check as the generated cases. Failures are collected
and reported together, so one run shows every case still broken.
"""

from __future__ import annotations

import json

from kubectl_squarepeg.config.keys import ALL_KEYS, KEYS
from tests.property.harness import Outcome, Sandbox, check_outcome
from tests.property.strategies import TRICKY, VALUED

RUN = ["run", "--dry-run", "-n", "prop"]
SHOWN_FAILURES = 5


def _failures(outcomes: list[tuple[Outcome, bool]]) -> list[str]:
    failed = []
    for outcome, manifest in outcomes:
        try:
            check_outcome(outcome, expect_manifest=manifest)
        except AssertionError as problem:
            failed.append(str(problem)[:1500])
    return failed


def test_every_option_with_every_tricky_value(sandbox: Sandbox) -> None:
    sandbox.clean()
    outcomes = []
    for flag in VALUED:
        for value in TRICKY:
            outcomes.append((sandbox.in_process([*RUN, flag, value, "alpine"]), True))
    failed = _failures(outcomes)
    assert not failed, f"{len(failed)} of {len(outcomes)} failed:\n" + "\n\n".join(
        failed[:SHOWN_FAILURES]
    )


def _scalar_form(value: str) -> str:
    """The value as a plain YAML scalar where it can be one, else double-quoted (a JSON
    string is a double-quoted YAML scalar)."""
    plain = (
        value.strip() == value and value and not any(c in value for c in ":#{}[],&*!|>'\"%@`\n\r\t")
    )
    return value if plain else json.dumps(value)


def test_every_config_key_with_every_tricky_value(sandbox: Sandbox) -> None:
    outcomes = []
    for key in ALL_KEYS:
        kind = KEYS[key].kind if key in KEYS else "map"
        for value in TRICKY:
            form = _scalar_form(value)
            for text in [f"{key}: {form}\n", *([f"{key}: [{form}]\n"] if kind == "list" else [])]:
                sandbox.write({"c.yaml": text})
                outcomes.append((sandbox.in_process([*RUN, "--config", "c.yaml", "alpine"]), True))
    failed = _failures(outcomes)
    assert not failed, f"{len(failed)} of {len(outcomes)} failed:\n" + "\n\n".join(
        failed[:SHOWN_FAILURES]
    )
