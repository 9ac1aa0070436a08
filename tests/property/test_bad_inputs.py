"""The named bad inputs (bad_inputs.py), each run as the installed executable: exactly one
error line that names the problem, the case's exit code, nothing created; and
docs/bad-inputs.md, the page made from these runs, matches them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.property.bad_inputs import CASES, DOC, BadInput, render
from tests.property.harness import Outcome, Sandbox, check_outcome

ROOT = Path(__file__).resolve().parents[2]


def run_case(sandbox: Sandbox, case: BadInput) -> Outcome:
    """One case as a process; the sandbox's directory reads `$PWD` in what it printed, so
    the page does not depend on where it was made."""
    sandbox.clean()
    sandbox.write(case.materialized_files())
    outcome = sandbox.process(case.argv, case.env)
    return replace(outcome, stderr=outcome.stderr.replace(str(sandbox.cwd), "$PWD"))


def run_all(sandbox: Sandbox) -> list[tuple[BadInput, Outcome]]:
    return [(case, run_case(sandbox, case)) for case in CASES]


def test_each_bad_input_is_one_line_naming_it_and_the_page_is_current(
        sandbox: Sandbox) -> None:
    assert len(CASES) >= 40
    assert len({case.name for case in CASES}) == len(CASES)
    results = run_all(sandbox)
    wrong = []
    for case, outcome in results:
        try:
            check_outcome(outcome, expect_manifest=False)
            assert outcome.code == case.code, f"exit {outcome.code}, not {case.code}"
            assert len(outcome.error_lines) == 1 and case.mentions in outcome.error_lines[0], (
                f"the error line does not mention {case.mentions!r}")
        except AssertionError as problem:
            wrong.append(f"{case.name}: {problem}\n{outcome.stderr}")
    assert not wrong, "\n\n".join(wrong)
    page = render([(case, outcome.code, outcome.error_lines[0]) for case, outcome in results])
    committed = (ROOT / DOC).read_text(encoding="utf-8")
    assert committed == page, f"{DOC} is stale: run scripts/bad-inputs-doc"
