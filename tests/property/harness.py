"""Running `kubectl-squarepeg` on generated input, and what every outcome must satisfy.

Two ways to run one case, checked by the same `check_outcome`:

- `Sandbox.in_process(argv)` calls `kubectl_squarepeg.cli.app.main(argv)`, the function the
  installed `kubectl-squarepeg` executable is (pyproject's [project.scripts]), inside
  click's `CliRunner.isolation` (stdin, stdout, stderr and os.environ swapped), in the
  sandbox's working directory. It is the same parsing, config loading, validation,
  manifest building and error mapping, at a few milliseconds per case instead of the
  ~0.25 s a Python start-up costs, which is what makes thousands of cases affordable. What
  it cannot see (the interpreter's own argv decoding, real file descriptors, the fast exit
  in `cli._leave`, the speculative start from argv[0]) is what `Sandbox.process(argv)`
  runs: the installed executable as a process, on a sample of the same generated cases.
- Both run with a `kubectl` of the sandbox's first on PATH: it logs every call and hands
  only `kubectl config view` to the real kubectl (a dry run reads the kubeconfig through
  it); every other verb fails. `Sandbox.cluster_calls()` lists the calls that were not
  `config view`, so "never a created object" is checked for every case, not assumed.

The sandbox has its own HOME, XDG config and cache homes, an aged kubeconfig (so the view
cache answers and most cases start no kubectl at all) and no $SQUAREPEG_CONFIG.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from click.testing import CliRunner

from tests.helpers import wait_until

SQUAREPEG = str(Path(sys.executable).parent / "kubectl-squarepeg")
ERROR_PREFIX = "squarepeg: error: "
PROCESS_SECONDS = 30.0


@dataclass
class Counter:
    """How many cases ran, by kind; printed at the end of the session (tests/conftest.py)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1


CASES = Counter()


@dataclass(frozen=True)
class Outcome:
    """One finished case: exit code, stdout bytes, stderr text, and a traceback if main()
    let an exception out (in-process) or Python printed one (process)."""

    argv: tuple[str, ...]
    code: int
    stdout: bytes
    stderr: str
    crash: str | None = None
    cluster_calls: tuple[str, ...] = ()  # kubectl calls other than `config view`

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith(ERROR_PREFIX)]


def check_outcome(outcome: Outcome, *, expect_manifest: bool = True) -> None:
    """The promise for bad input: exit 0 or 125; on 125 exactly one `squarepeg: error:` line
    that says something, and no other error line; never a traceback; every stderr line is
    squarepeg's own. On 0 with `expect_manifest`, stdout is one Pod or Job."""
    shown = f"argv={list(outcome.argv)!r}\nexit={outcome.code}\nstderr:\n{outcome.stderr}"
    assert outcome.crash is None, f"main() raised:\n{outcome.crash}\n{shown}"
    assert "Traceback (most recent call last)" not in outcome.stderr, shown
    assert outcome.code in (0, 125), shown
    assert not outcome.cluster_calls, f"kubectl was asked {outcome.cluster_calls}\n{shown}"
    lines = outcome.stderr.splitlines()
    assert all(line.startswith("squarepeg: ") for line in lines), shown
    errors = outcome.error_lines
    if outcome.code == 125:
        assert len(errors) == 1, shown
        assert len(errors[0]) > len(ERROR_PREFIX) + 10, shown
        assert "internal error" not in errors[0], shown
    else:
        assert not errors, shown
        if expect_manifest:
            doc = yaml.safe_load(outcome.stdout)
            assert isinstance(doc, dict) and doc.get("kind") in ("Pod", "Job"), shown


_SHIM = """#!/bin/sh
# Logs `PID start ARGS`, then `PID end` or `PID end WROTE`: WROTE when the call handed
# the cluster something to act on (a create given a manifest, or any verb that changes).
printf '%s start %s\\n' "$$" "$*" >> "{log}"
verb=""
for word in "$@"; do case "$word" in --*) ;; *) verb="$word"; break ;; esac; done
case "$verb $*" in
  "config "*" config view "*)
    "{real}" "$@"; rc=$?; printf '%s end\\n' "$$" >> "{log}"; exit $rc ;;
esac
case "$verb" in
  create|apply|replace) if [ -n "$(head -c 1)" ]; then wrote=" WROTE"; else wrote=""; fi ;;
  delete|patch|label|annotate|scale|edit|run|expose) wrote=" WROTE" ;;
  *) wrote="" ;;
esac
printf '%s end%s\\n' "$$" "$wrote" >> "{log}"
echo "error: the property suite's kubectl refuses '$1'" >&2
exit 1
"""


class Sandbox:
    """A scratch HOME and working directory with a call-logging kubectl; see the module
    docstring."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cwd = root / "cwd"
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.home = root / "home"
        self.home.mkdir(exist_ok=True)
        bindir = root / "bin"
        bindir.mkdir(exist_ok=True)
        self.calls = root / "kubectl-calls.log"
        self.calls.touch()
        real = shutil.which("kubectl")
        assert real is not None, "kubectl is not on PATH"
        shim = bindir / "kubectl"
        shim.write_text(_SHIM.format(log=self.calls, real=real))
        shim.chmod(0o755)
        self.kubeconfig = root / "kubeconfig"
        self.kubeconfig.write_text(yaml.safe_dump(_KUBECONFIG))
        aged = time.time() - 3600  # older than the view cache's racy window
        os.utime(self.kubeconfig, (aged, aged))
        self.env: dict[str, str] = {
            "PATH": f"{bindir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
            f"{os.environ.get('PATH', '')}",
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / "xdg-config"),
            "XDG_CACHE_HOME": str(self.home / "xdg-cache"),
            "KUBECONFIG": str(self.kubeconfig),
            "KUBECACHEDIR": str(root / "kube-cache"),
            "USER": "prop",
            "LOGNAME": "prop",
            "LANG": "C.UTF-8",
        }

    def clean(self) -> None:
        """Empty the working directory between cases (the files of the last one)."""
        for entry in self.cwd.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def write(self, files: Mapping[str, bytes | str]) -> None:
        for name, content in files.items():
            path = self.cwd / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):
                content = content.encode("utf-8", "surrogateescape")
            path.write_bytes(content)

    def cluster_calls(self, since: int = 0) -> list[str]:
        """What kubectl was asked to do to the cluster (`PID end WROTE` lines of the log),
        so far or since the log had `since` bytes: none may be. A call that read (a
        `get`), or a create whose stdin closed empty (the head start's, when the run
        ended in an error), changed nothing and is not counted."""
        lines = self._log_since(since)
        wrote = {line.split()[0] for line in lines if line.endswith(" end WROTE")}
        return [line for line in lines if " start " in line and line.split()[0] in wrote]

    def _log_since(self, since: int) -> list[str]:
        with self.calls.open("rb") as log:
            log.seek(since)
            return log.read().decode(errors="replace").splitlines()

    def _calls_finished(self, since: int) -> bool:
        lines = self._log_since(since)
        return sum(" start " in ln for ln in lines) == sum(" end" in ln for ln in lines)

    def _log_size(self) -> int:
        return self.calls.stat().st_size

    def environ(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        return {**self.env, **(extra or {})}

    def in_process(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Outcome:
        """cli.main(argv) in this process; see the module docstring."""
        from kubectl_squarepeg.cli import app as cli
        from kubectl_squarepeg.cluster import kubectl

        CASES.add("in-process")
        environ = self.environ(env)
        overrides: dict[str, str | None] = {k: None for k in os.environ if k not in environ}
        overrides.update(environ)
        runner = CliRunner()
        logged = self._log_size()
        crash = None
        code = -1
        with _working_directory(self.cwd), runner.isolation(env=overrides) as streams:
            out, err, _ = streams
            try:
                cli.main(list(argv))
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException:  # anything main() lets out would be a user's traceback
                crash = traceback.format_exc()
            finally:
                # What the process's exit does (atexit): end every kubectl child it left.
                kubectl.terminate_all()
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
            stdout, stderr = out.getvalue(), err.getvalue()
        return Outcome(tuple(argv), code, stdout, stderr.decode("utf-8", "replace"), crash,
                       tuple(self.cluster_calls(logged)))

    def process(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Outcome:
        """The installed executable as a process; see the module docstring."""
        CASES.add("process")
        logged = self._log_size()
        done = subprocess.run(
            [SQUAREPEG, *(os.fsencode(a) for a in argv)],
            env={os.fsencode(k): os.fsencode(v) for k, v in self.environ(env).items()},
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROCESS_SECONDS,
        )
        # A child squarepeg left (the head start's create) logs when its stdin closes.
        wait_until(lambda: self._calls_finished(logged), 10, "the kubectl calls to end")
        return Outcome(tuple(argv), done.returncode, done.stdout,
                       done.stderr.decode("utf-8", "replace"),
                       cluster_calls=tuple(self.cluster_calls(logged)))


_KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "prop", "cluster": {"server": "https://127.0.0.1:9"}}],
    "users": [{"name": "prop", "user": {"token": "unused"}}],
    "contexts": [{"name": "prop", "context": {"cluster": "prop", "user": "prop",
                                              "namespace": "prop-ns"}}],
    "current-context": "prop",
}


@contextlib.contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)
