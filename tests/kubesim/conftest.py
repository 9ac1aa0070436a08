"""The fixtures of kubesim's own tests: `sim` (a started cluster over an in-memory Store, the
default scenario) and `sim_with` (a factory taking scenario keys), from cluster_testkit.py.

Both stop their clusters after the test and fail it if a process group the kubelet started
is still alive. Held here, not imported into each test module, so no module repeats them.
"""

from tests.kubesim.cluster_testkit import sim_fixture, sim_with_fixture

__all__ = ["sim_fixture", "sim_with_fixture"]
