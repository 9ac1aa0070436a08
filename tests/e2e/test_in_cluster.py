"""squarepeg inside a pod, for real: the kubelet node runs it with a service account bound to
the documented Role, and it runs sibling pods and Jobs through the API server.

On localkube's kubelet node only. The image is made once for the module: the node's
`python` image (busybox and the machine's python3.11) with a third layer
(node_image.squarepeg_layer) holding the machine's kubectl (the newest real client beside
the dispatcher: a static Go binary) and squarepeg's release zipapp (scripts/build-release:
click, PyYAML, jsonpatch and sh inside), put on it in the node's registry with `crane
append`. The pod has no kubeconfig: squarepeg finds none, falls back to the service
account (connect.py), and reaches the API server at the `kubernetes` Service's address, which
localkube answers inside the node's network (tests/localkube/service_address.py).

The outer run is `kubectl squarepeg run --service-account ...` itself, with the admin's
login: its exit code is the inner run's, and its output is the inner run's stdout and
stderr (the node merges them), so one outer run shows the inner banner, output and exit
code. A Role without `list` on pods then shows the sweep's warning, with an unchanged exit
code.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Finished, Squarepeg, wait_until
from tests.e2e.test_logins import grant, without
from tests.localkube import launcher, node_build, node_image
from tests.permissions_doc import documented_role

pytestmark = pytest.mark.localkube_only(
    "runs squarepeg in a pod of the real kubelet node, with a service account and RBAC")

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "squarepeg-in-cluster:test"
REGISTRY = "127.0.0.1:5000"
BASE = f"{REGISTRY}/library/python:3.11"
SERVICE_ACCOUNT = "runner"
INNER = ("python3", "/app/squarepeg.pyz", "run")


def machine_kubectl() -> Path:
    """The newest real kubectl client on the machine: the dispatcher's newest sibling
    (`kubectl.1.NN`) when there is one, else `kubectl` itself."""
    found = shutil.which("kubectl")
    assert found is not None, "no kubectl on PATH"
    real = Path(found).resolve()
    siblings = sorted(real.parent.glob("kubectl.1.*"), key=lambda p: int(p.name.split(".")[-1]))
    return siblings[-1] if siblings else real


def build_zipapp(out: Path) -> Path:
    manifest = out / "plugin.yaml"
    shutil.copyfile(ROOT / "plugin.yaml", manifest)  # build-release writes its sha256 there
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build-release"), "--out", str(out / "release"),
         "--manifest", str(manifest), "--cache", str(ROOT / "build" / "release-cache")],
        capture_output=True, text=True, timeout=300, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"build-release failed:\n{done.stderr}"
    return out / "release" / "kubectl-squarepeg"


@pytest.fixture(scope="module")
def image(kubesim: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The squarepeg image, pushed to the node's registry; its name as pods give it."""
    if getattr(kubesim, "node", None) != "kubelet":
        pytest.skip("needs localkube's kubelet node (its registry and real pods)")
    work = tmp_path_factory.mktemp("in-cluster-image")
    layer = work / "layer.tar"
    layer.write_bytes(node_image.squarepeg_layer(machine_kubectl().read_bytes(),
                                                 build_zipapp(work).read_bytes()))
    netns = launcher.control_path(Path(kubesim.kubeconfig)).parent / "node" / "netns"
    done = subprocess.run(
        ["nsenter", f"--net={netns}", str(node_build.bin_dir() / "crane"), "append",
         "--insecure", "-b", BASE, "-f", str(layer), "-t", f"{REGISTRY}/library/{IMAGE}"],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"crane append failed:\n{done.stderr}"
    return IMAGE


def service_account(cluster: Any, namespace: str, role: dict[str, Any]) -> None:
    made = cluster.kubectl("create", "serviceaccount", SERVICE_ACCOUNT, "-n", namespace)
    assert made.returncode == 0, made.stderr
    grant(cluster, namespace, role, {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT,
                                     "namespace": namespace})


def in_pod(squarepeg: Squarepeg, image: str, script: str) -> Finished:
    """The outer run: `sh -c SCRIPT` in the image, as the service account."""
    return squarepeg("run", "--service-account", SERVICE_ACCOUNT, "--timeout", "120", image,
                     "sh", "-c", script, timeout=240)


def inner(*args: str) -> str:
    """The shell words of an inner run."""
    return shlex.join([*INNER, *args])


def no_pods_of_the_inner_runs(cluster: Any, namespace: str) -> bool:
    done = cluster.kubectl("get", "pods,jobs", "-n", namespace, "-o", "name", "-l",
                           "squarepeg.io/created-by")
    return done.returncode == 0 and not done.stdout.strip()


def test_squarepeg_in_a_pod_runs_a_sibling_pod_and_job(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, image: str
) -> None:
    service_account(kubesim, namespace, documented_role())
    script = (f"{inner('alpine', 'sh', '-c', 'echo pod-out; exit 3')}; echo pod=$?; "
              f"{inner('--mode', 'job', 'alpine', 'sh', '-c', 'echo job-out; exit 4')}")
    done = in_pod(squarepeg, image, script)
    output = done.stdout.decode(errors="replace")
    assert done.code == 4, (done.lines, output)  # the inner Job's exit code, passed on twice
    lines = output.splitlines()
    banner = f": using in-cluster config, namespace {namespace}"
    banners = [line for line in lines if line.endswith(banner)]
    assert len(banners) == 2, lines  # from the projected namespace file
    assert banners[0].startswith("squarepeg: pod/"), banners  # the banner names the run
    assert banners[1].startswith("squarepeg: job/"), banners
    assert "pod-out" in lines and "pod=3" in lines and "job-out" in lines, lines
    assert not [line for line in lines if "warning" in line], lines  # the sweep ran clean
    wait_until(lambda: no_pods_of_the_inner_runs(kubesim, namespace), 60,
               "the outer and inner runs' pods and Job to be deleted")


def test_in_a_pod_without_list_the_sweep_warns_and_the_exit_code_stays(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, image: str
) -> None:
    service_account(kubesim, namespace, without(documented_role(), ("pods", "list")))
    done = in_pod(squarepeg, image, inner("alpine", "sh", "-c", "echo out; exit 3"))
    output = done.stdout.decode(errors="replace")
    assert done.code == 3, (done.lines, output)
    account = f"system:serviceaccount:{namespace}:{SERVICE_ACCOUNT}"
    warned = [line for line in output.splitlines()
              if "warning: orphan sweep incomplete" in line]
    assert warned, output
    # In-cluster, the printed command carries the namespace only (commands.py).
    assert f'User "{account}" cannot list resource "pods"' in warned[0]
    assert f"`kubectl auth can-i list pods --namespace={namespace}`" in warned[0], warned
    assert "out" in output.splitlines()
    wait_until(lambda: no_pods_of_the_inner_runs(kubesim, namespace), 60,
               "the runs' pods to be deleted")


# The pod's own user as the created-by label (getpass in the pod, as squarepeg computes it),
# then a pod labelled as a run of that user's, stuck on an image that does not exist: an
# orphan of the stuck kind, which has no age floor (run/sweep.py), so a sweep with
# orphan_sweep_min_age 0 takes it at once. Made from inside the pod with the service account.
LEAVE_AN_ORPHAN = r"""
label=$(python3 -c 'import getpass, sys
sys.path.insert(0, "/app/squarepeg.pyz")
from kubectl_squarepeg.plan.manifest import created_by_value
print(created_by_value(getpass.getuser()))')
labels="app.kubernetes.io/managed-by=squarepeg,squarepeg.io/created-by=$label"
kubectl run left-behind --restart=Never --image=no-such-image-xyz:3 \
  --labels="$labels,squarepeg.io/run-id=left-behind-run" >/dev/null || exit 96
reason='jsonpath={.status.containerStatuses[0].state.waiting.reason}'
tries=0
until kubectl get pod left-behind -o "$reason" | grep -q ImagePull; do
  tries=$((tries + 1)); [ "$tries" -gt 120 ] && exit 97; sleep 0.5
done
echo 'orphan_sweep_min_age: 0' > /tmp/sweep.yaml
"""


def test_in_a_pod_the_sweep_deletes_an_orphan_of_its_own_user(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, image: str
) -> None:
    service_account(kubesim, namespace, documented_role())
    script = LEAVE_AN_ORPHAN + inner("--config", "/tmp/sweep.yaml", "alpine", "echo", "ran")
    done = in_pod(squarepeg, image, script)
    output = done.stdout.decode(errors="replace")
    assert done.code == 0, (done.lines, output)
    lines = output.splitlines()
    assert "ran" in lines, lines
    assert any("orphan sweep: deleted 1 resource" in line and "left-behind" in line
               for line in lines), lines
    assert not [line for line in lines if "warning" in line], lines
    gone = kubesim.kubectl("get", "pod", "left-behind", "-n", namespace, "-o", "name")
    assert gone.returncode != 0 and b"NotFound" in gone.stderr, gone
    wait_until(lambda: no_pods_of_the_inner_runs(kubesim, namespace), 60,
               "the runs' pods to be deleted")
