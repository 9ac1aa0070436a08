"""Hypothesis settings of the property suites (the count of cases they ran is printed by
tests/conftest.py, which pytest-xdist's controller loads, and adds up from the workers).

The `ci` profile (the default) is derandomized: the same cases every run, so a failure in
CI is reproducible and the suite's cost is fixed. `HYPOTHESIS_PROFILE=explore` draws new
random cases, ten times as many, for a person hunting for bugs; a failure it finds is
printed with its argv, ready to become a named case in bad_inputs.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.property.harness import Sandbox

_QUIET_CHECKS = [HealthCheck.too_slow, HealthCheck.data_too_large,
                 HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much]
settings.register_profile("ci", derandomize=True, deadline=None, database=None,
                          print_blob=True, suppress_health_check=_QUIET_CHECKS)
settings.register_profile("explore", deadline=None, max_examples=5000,
                          suppress_health_check=_QUIET_CHECKS)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
SCALE = 10 if os.environ.get("HYPOTHESIS_PROFILE") == "explore" else 1


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    box = Sandbox(Path(tmp_path_factory.mktemp("property")))
    yield box
    assert box.cluster_calls() == [], "a case asked kubectl for more than `config view`"
