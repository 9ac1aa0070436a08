"""The command line of kubesim (`scripts/kubesim`, `python -m tests.kubesim`).

    serve --kubeconfig FILE [--scenario FILE] [--port N] [--latency MS] [--verbose]
        Start a simulated cluster, write FILE (context `kubesim`, namespace `default`), print
        one line `kubesim: ready on https://127.0.0.1:PORT (kubeconfig FILE)` on stdout, serve
        until SIGTERM or SIGINT, then stop the cluster half (every container process ends)
        and exit 0; exit 3 when a process it started outlived the stop. --latency MS holds
        every answer MS milliseconds (and every new connection's handshake), as a remote
        API server's round trip would; 0, the default, answers at once.
    ctl --kubeconfig FILE VERB [ARGS]
        drop-logs [--after-bytes N] | drop-watches | restart --down SECONDS |
        evict NAMESPACE/POD | delete-pod NAMESPACE/POD [--grace-period N] | stats |
        seed-pods NAMESPACE COUNT [--labels a=b,c=d] [--prefix P]
        Ask the running simulator, over its control API, to inject a fault. Prints its
        answer (JSON) and exits 0, or prints the error and exits 1.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import signal
import ssl
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml


def write_kubeconfig(path: Path, config: dict[str, Any]) -> None:
    """Write atomically (a reader never sees half a file), readable by the owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".kubeconfig-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    os.replace(tmp, path)


def descendants(root: int) -> set[tuple[int, str]]:
    """(pid, start time) of every living process below `root`, from /proc."""
    children: dict[int, list[int]] = {}
    starts: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        starts[pid] = fields[19]
    found: set[tuple[int, str]] = set()
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.add((pid, starts.get(pid, "")))
        todo.extend(children.get(pid, []))
    return found


def alive(processes: set[tuple[int, str]]) -> set[tuple[int, str]]:
    alive = set()
    for pid, start in processes:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if fields[19] == start and fields[0] != "Z":
            alive.add((pid, start))
    return alive


def serve(args: argparse.Namespace) -> int:
    from tests.kubesim.scenario import ScenarioError, load_scenario
    from tests.kubesim.server import KubeSim

    try:
        scenario = load_scenario(args.scenario)
    except (OSError, ScenarioError, yaml.YAMLError) as exc:
        print(f"kubesim: error: cannot read the scenario {args.scenario}: {exc}",
              file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sim = KubeSim(scenario, port=args.port, verbose=args.verbose, latency_ms=args.latency)
    try:
        sim.start()
    except OSError as exc:
        print(f"kubesim: error: cannot listen on port {args.port}: {exc}", file=sys.stderr)
        sim.stop()
        return 2
    kubeconfig = Path(args.kubeconfig).resolve()
    write_kubeconfig(kubeconfig, sim.kubeconfig())
    print(f"kubesim: ready on {sim.url} (kubeconfig {kubeconfig})", flush=True)
    while not stop.wait(0.5):
        pass
    started = descendants(os.getpid())
    sim.stop()
    deadline = time.monotonic() + 5
    left = alive(started)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = alive(left)
    if left:
        for pid, _ in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        pids = " ".join(str(pid) for pid, _ in sorted(left))
        print(f"kubesim: error: processes outlived the stop and were killed: {pids}",
              file=sys.stderr)
        return 3
    return 0


def _client(kubeconfig: Path) -> tuple[str, str, ssl.SSLContext]:
    config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    contexts = {c["name"]: c["context"] for c in config.get("contexts") or []}
    context = contexts[config["current-context"]]
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    ssl_context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return cluster["server"], user["token"], ssl_context


def control_request(kubeconfig: Path, method: str, verb: str, params: dict[str, Any],
                    timeout: float = 120.0) -> Any:
    """Call the control API; returns the decoded JSON answer, raises RuntimeError."""
    import urllib.error
    import urllib.parse
    import urllib.request

    server, token, ssl_context = _client(kubeconfig)
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    url = f"{server}/kubesim/{verb}" + (f"?{query}" if query else "")
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None,
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, context=ssl_context, timeout=timeout) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read()).get("message", str(exc))
        except ValueError:
            message = str(exc)
        raise RuntimeError(f"{verb}: {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise RuntimeError(f"{verb}: cannot reach kubesim at {server}: {exc}") from None


def _pod_ref(text: str) -> tuple[str, str]:
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name:
        raise SystemExit(f"kubesim: error: expected NAMESPACE/POD, got {text!r}")
    return namespace, name


def ctl(args: argparse.Namespace) -> int:
    kubeconfig = Path(args.kubeconfig)
    params: dict[str, Any] = {}
    method = "POST"
    verb = args.verb
    if verb == "drop-logs":
        params["afterBytes"] = args.after_bytes
        params["times"] = args.times
    elif verb == "drop-watches":
        params["afterSeconds"] = args.after_seconds
        params["times"] = args.times
    elif verb == "restart":
        params["down"] = args.down
        if args.at_delete_of:
            params["atDeleteOf"] = args.at_delete_of
    elif verb in ("evict", "delete-pod"):
        params["namespace"], params["name"] = _pod_ref(args.pod)
        if verb == "delete-pod":
            params["gracePeriodSeconds"] = args.grace_period
    elif verb == "seed-pods":
        params.update(namespace=args.namespace, count=args.count, labels=args.labels,
                      prefix=args.prefix)
    elif verb == "stats":
        method = "GET"
    try:
        answer = control_request(kubeconfig, method, verb, params)
    except (RuntimeError, OSError, KeyError, ValueError, StopIteration) as exc:
        print(f"kubesim: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(answer))
    return 0


def _milliseconds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of milliseconds >= 0")
    return value


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="kubesim", description="A Kubernetes cluster simulator "
                                  "that the real kubectl talks to.")
    verbs = top.add_subparsers(dest="command", required=True)
    serve_p = verbs.add_parser("serve", help="start a simulated cluster")
    serve_p.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig")
    serve_p.add_argument("--scenario", help="a scenario YAML file (see scenario.py)")
    serve_p.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    serve_p.add_argument("--latency", type=_milliseconds, default=0, metavar="MS",
                         help="hold every answer MS ms, as a remote server would (default 0)")
    serve_p.add_argument("--verbose", action="store_true", help="log every request")
    ctl_p = verbs.add_parser("ctl", help="inject a fault into a running simulator")
    ctl_p.add_argument("--kubeconfig", required=True, help="the kubeconfig serve wrote")
    faults = ctl_p.add_subparsers(dest="verb", required=True)
    drop = faults.add_parser("drop-logs", help="cut open log streams")
    drop.add_argument("--after-bytes", type=int, default=None,
                      help="let each stream send N more bytes first")
    drop.add_argument("--times", type=int, default=None,
                      help="standing: cut every stream, now and later, after --after-bytes, "
                           "this many times per container")
    watches = faults.add_parser("drop-watches", help="cut open watches")
    watches.add_argument("--times", type=int, default=None,
                         help="standing: cut every watch, now and later, --after-seconds after "
                              "it began, this many times per watcher")
    watches.add_argument("--after-seconds", type=float, default=None)
    restart = faults.add_parser("restart", help="stop listening for a while, keep state")
    restart.add_argument("--down", type=float, required=True, help="seconds to stay down")
    restart.add_argument("--at-delete-of", metavar="NAME", default=None,
                         help="not now: when a DELETE of an object called NAME arrives (503)")
    evict = faults.add_parser("evict", help="evict a pod for node pressure")
    evict.add_argument("pod", help="NAMESPACE/POD")
    delete = faults.add_parser("delete-pod", help="delete a pod as another actor would")
    delete.add_argument("pod", help="NAMESPACE/POD")
    delete.add_argument("--grace-period", type=int, default=None)
    faults.add_parser("stats", help="object counts and open watches")
    seed = faults.add_parser("seed-pods", help="store pods that never run (scale tests)")
    seed.add_argument("namespace")
    seed.add_argument("count", type=int)
    seed.add_argument("--labels", default="", help="a=b,c=d")
    seed.add_argument("--prefix", default="seed-")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    return ctl(args)


if __name__ == "__main__":
    sys.exit(main())
