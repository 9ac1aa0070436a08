"""What a real node's log kept of each container, read from the node's own files.

containerd can lose output that the log API never shows missing (docs/output.md: a restart
of containerd, decision 0423). To tell such a loss from squarepeg's, a test compares a run's
stdout with the node's CRI log files of its pod. The kubelet removes those files with the
pod, and renames the current one at every rotation (containerd then opens a new one), so
`NodeLogKeeper` hard-links every `N.log` of a namespace's pods as each appears, by inode:
the links keep what containerd wrote to each file, up to its last write, whatever the
kubelet renames, compresses or removes. N is the container's attempt: a container created
but not started when the kubelet restarted is created again by the new kubelet, as attempt
1, and writes `1.log` (a soak's exact run whose kept `0.log` was empty, in CI and by hand
on 7 December). Only for localkube's kubelet nodes, whose state directories are on this
machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

# How often the pods' log directories are looked at: far more often than the kubelet can
# rotate a file (containerLogMonitorInterval, 10 s).
POLL_SECONDS = 0.1
# How often the list of nodes is asked for again (a node added meanwhile).
NODES_SECONDS = 5.0


def cri_log_output(log: bytes) -> bytes:
    """The container output a CRI log file holds: each entry is `TIME STREAM TAG CONTENT`,
    and a tag starting with `P` marks a line the runtime split (no newline after it)."""
    out = []
    for entry in log.split(b"\n"):
        fields = entry.split(b" ", 3)
        if len(fields) < 3:
            continue
        content = fields[3] if len(fields) == 4 else b""
        out.append(content if fields[2].startswith(b"P") else content + b"\n")
    return b"".join(out)


def pod_log_dirs(ctl: Callable[..., str]) -> list[Path]:
    """Each kubelet node's pod log directory, from localkube's `ctl nodes`."""
    nodes = json.loads(ctl("nodes"))["nodes"]
    return [Path(node["stateDirectory"]) / "var-log" / "pods" for node in nodes]


class NodeLogKeeper:
    """Keeps every CRI log file of the pods of `namespace` while it runs (see the module's
    docstring), in `kept`, until `close()`."""

    def __init__(self, ctl: Callable[..., str], namespace: str, kept: Path) -> None:
        self._ctl, self._namespace = ctl, namespace
        self.kept = kept
        self.kept.mkdir(parents=True, exist_ok=True)
        self.problem: str | None = None
        self._seen: dict[str, list[int]] = {}  # pod: the inodes of its files, in order
        self._stop = threading.Event()
        # Asked here, before the runs begin, and then on a thread of its own: `ctl nodes`
        # waits while the launcher carries out a fault, and the soak's ctl retries it for up
        # to a minute while the API server restarts; the looks at the files must not wait.
        self._dirs = pod_log_dirs(ctl)
        self._threads = [
            threading.Thread(target=self._loop, name="node-logs", daemon=True),
            threading.Thread(target=self._ask_for_nodes, name="node-logs-nodes", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def output(self, pod: str) -> bytes | None:
        """What the node's files hold of `pod`'s output, oldest file first (stdout and stderr
        merged, as the log API gives it); None if no file of it was seen."""
        inodes = self._seen.get(pod)
        if not inodes:
            return None
        return b"".join(cri_log_output((self.kept / f"{pod}.{inode}.log").read_bytes())
                        for inode in inodes)

    def _ask_for_nodes(self) -> None:
        """The nodes' directories again now and then: a node added meanwhile."""
        while not self._stop.wait(NODES_SECONDS):
            with contextlib.suppress(RuntimeError, ValueError, KeyError):
                self._dirs = pod_log_dirs(self._ctl)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for pods in self._dirs:
                for log in pods.glob(f"{self._namespace}_*/main/*.log"):
                    if not self._keep(log):
                        return
            self._stop.wait(POLL_SECONDS)

    def _keep(self, log: Path) -> bool:
        """Link `log` if its inode is new; False once keeping has failed for good."""
        pod = log.parent.parent.name.split("_")[1]
        try:
            inode = log.stat().st_ino
            if inode in self._seen.get(pod, []):
                return True
            os.link(log, self.kept / f"{pod}.{inode}.log")
        except FileNotFoundError:
            return True  # renamed or removed meanwhile: the next look finds the new one
        except FileExistsError:
            pass  # the same inode linked by a look that raced a rename
        except OSError as exc:
            self.problem = f"cannot keep the node's log files: {exc}"
            return False
        self._seen.setdefault(pod, []).append(inode)
        return True
