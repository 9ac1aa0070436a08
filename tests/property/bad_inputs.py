"""The named bad inputs: one table that drives both their test (test_bad_inputs.py) and the
page that shows users what each one prints (docs/bad-inputs.md, written by
scripts/bad-inputs-doc from the same runs, and checked by the test to be current).

Each case is a command line after `kubectl squarepeg`, the files it finds in its working
directory (made by a function when they are large, so importing this module stays cheap),
its extra environment, a fragment its one error line must contain, and its exit code. The
files built to exhaust time or memory are here too: a config or env file may come from a
repository the user just cloned.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

FileContent = str | bytes | Callable[[], bytes]


@dataclass(frozen=True)
class BadInput:
    name: str
    argv: tuple[str, ...]
    mentions: str
    files: Mapping[str, FileContent] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    code: int = 125

    def materialized_files(self) -> dict[str, bytes | str]:
        return {k: v() if callable(v) else v for k, v in self.files.items()}

    def command(self) -> str:
        """The command line as a user would type it; a very long word is shown cut short."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        shown = [w if len(w) <= 40 else f"{w[:12]}...({len(w)} characters)" for w in self.argv]
        words = " ".join(shlex.quote(word) for word in ("kubectl", "squarepeg", *shown))
        return f"{env} {words}" if env else words


def _laughs(levels: int, under: str = "") -> bytes:
    """The "billion laughs": each anchor a list of nine aliases of the one before."""
    indent = "  " * under.count(":")
    lines = [under] if under else []
    lines.append(f'{indent}l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]')
    for level in range(1, levels):
        aliases = ",".join([f"*l{level - 1}"] * 9)
        lines.append(f"{indent}l{level}: &l{level} [{aliases}]")
    return ("\n".join(lines) + "\n").encode()


def _merge_bomb() -> bytes:
    """Mappings that merge (`<<`) nine copies of the mapping before, nine levels deep:
    PyYAML's own merge would copy 9**8 pairs; squarepeg keeps each key once."""
    lines = ["labels:", "  m0: &m0 {a: '1', b: '2', c: '3', d: '4', e: '5', f: '6', g: '7'}"]
    for level in range(1, 9):
        sources = ", ".join([f"*m{level - 1}"] * 9)
        lines.append(f"  m{level}: &m{level} {{<<: [{sources}], k{level}: '{level}'}}")
    return ("\n".join(lines) + "\n").encode()


def _nested(levels: int) -> bytes:
    return ("kubernetes:\n  spec:\n    x: " + "[" * levels + "]" * levels + "\n").encode()


def _huge(size: int, line: bytes = b"# padding\n") -> Callable[[], bytes]:
    return lambda: line * (size // len(line) + 1)


_RUN = ("run", "--dry-run", "-n", "demo")


def _run(*args: str) -> tuple[str, ...]:
    return (*_RUN, *args)


CASES: list[BadInput] = [
    # --- the command line ---------------------------------------------------------------
    BadInput("a misspelt option", _run("--cpu", "0.5", "alpine"), "Did you mean"),
    BadInput("an option's value missing", ("run", "--dry-run", "--cpus"), "requires an argument"),
    BadInput("no IMAGE", ("run", "--dry-run"), "IMAGE"),
    BadInput("an IMAGE that looks like an option", _run("--", "-alpine"), "-alpine"),
    BadInput("an unknown subcommand", ("runn", "alpine"), "runn"),
    BadInput("CPUs that are not a number", _run("--cpus", "lots", "alpine"), "--cpus"),
    BadInput("CPUs finer than a millicore", _run("--cpus", "0.0001", "alpine"), "0.0001"),
    BadInput("CPUs of 5,000 digits", _run("--cpus", "1" * 5000, "alpine"), "out of range"),
    BadInput("negative CPUs", _run("--cpus", "-0.5", "alpine"), "--cpus"),
    BadInput("a size below one byte", _run("--shm-size", "0.1b", "alpine"), "one byte"),
    BadInput("a memory size with a bad unit", _run("-m", "1x", "alpine"), "--memory"),
    BadInput("a GPU count in superscript", _run("--gpus", "\u00b2", "alpine"), "--gpus"),
    BadInput("a user name instead of a UID", _run("-u", "root", "alpine"), "numeric"),
    BadInput("a relative working directory", _run("-w", "app", "alpine"), "absolute"),
    BadInput("a bad pull policy", _run("--pull", "sometimes", "alpine"), "--pull"),
    BadInput("a bad mode", _run("--mode", "deployment", "alpine"), "--mode"),
    BadInput("a negative timeout", _run("--timeout", "-5", "alpine"), "negative"),
    BadInput("a timeout in fortnights", _run("--timeout", "2w", "alpine"), "--timeout"),
    BadInput("a label without a key", _run("-l", "=team", "alpine"), "KEY=VALUE"),
    BadInput("a reserved label", _run("-l", "squarepeg.io/run-id=x", "alpine"), "reserved"),
    BadInput("an env name with a space (value hidden)", _run("-e", "MY KEY=hunter2", "alpine"),
             "MY KEY=..."),
    BadInput("an upper-case --name", _run("--name", "MyPod", "alpine"), "--name"),
    BadInput("a platform with an empty architecture", _run("--platform", "linux/", "alpine"),
             "--platform"),
    BadInput("a platform of four parts", _run("--platform", "linux/arm/v7/x", "alpine"),
             "--platform"),
    BadInput("a toleration without an effect", _run("--toleration", "gpu", "alpine"),
             "--toleration"),
    BadInput("an --add-host without an IP", _run("--add-host", "db", "alpine"), "--add-host"),
    BadInput("a DNS server that is not an IP", _run("--dns", "dns.local", "alpine"), "--dns"),
    BadInput("a group name for --group-add", _run("--group-add", "wheel", "alpine"),
             "numeric group IDs"),
    BadInput("a sysctl name in capitals", _run("--sysctl", "Net.Core.somaxconn=1024", "alpine"),
             "--sysctl"),
    BadInput("a memory reservation above -m", _run("-m", "512m", "--memory-reservation", "1g",
             "alpine"), "larger than the -m limit"),
    # --- -p (docs/decisions/0230); a taken local port: tests/e2e/test_ports.py -----------
    BadInput("-p with a port outside 1-65535", _run("-p", "8080:70000", "alpine"),
             "outside 1-65535"),
    BadInput("-p with a port that is not a number", _run("-p", "8080:http", "alpine"),
             "not a port number"),
    BadInput("-p with a host range for one container port", _run("-p", "8000-8010:80",
             "alpine"), "not the same number of ports"),
    BadInput("-p with a malformed HOST_IP", _run("-p", "1.2.3:8080:80", "alpine"),
             "not an IP address"),
    BadInput("-p with an IPv6 HOST_IP out of brackets", _run("-p", "::1:8080:80", "alpine"),
             "in brackets"),
    BadInput("-p of UDP, which port-forward cannot carry", _run("-p", "53:53/udp", "alpine"),
             "TCP only"),
    BadInput("-p with one host port twice", _run("-p", "8080:80", "-p", "8080:81", "alpine"),
             "published twice"),
    BadInput("-P, whose ports only the image knows", _run("-P", "alpine"), "EXPOSE"),
    BadInput("-p on an address of no local interface, checked before the create",
             ("run", "-n", "demo", "-p", "192.0.2.1:8080:80", "alpine"),
             "not an address of this machine"),
    # --- mounts (docs/decisions/0180); SRC is read only by a run, not by --dry-run ---------
    BadInput("a SRC that does not exist", ("run", "-n", "demo", "-v", "./data:/data", "alpine"),
             "does not exist"),
    BadInput("a SRC that is a device", ("run", "-n", "demo", "-v", "/dev/null:/x", "alpine"),
             "not a file or directory"),
    BadInput("a tree above max_upload_bytes", ("run", "-n", "demo", "--config", "c.yaml", "-v",
             "./data:/data", "alpine"), "max_upload_bytes",
             files={"c.yaml": "max_upload_bytes: 1k\n", "data/big.bin": b"x" * 4096}),
    BadInput("a local path in a detached run", ("run", "-n", "demo", "-d", "-v",
             "./data:/data", "alpine"), "-d does not wait for",
             files={"data/a.txt": "a\n"}),
    BadInput("a relative mount destination", _run("-v", "./src:src", "alpine"), "absolute"),
    BadInput("a mount at /", _run("-v", "./src:/", "alpine"), "cannot be /"),
    BadInput("two mounts at one destination", _run("-v", "./a:/x", "-v", "cache:/x/",
             "alpine"), "two mounts at /x"),
    BadInput("SELinux relabelling :z", _run("-v", "./src:/src:z", "alpine"), "SELinux"),
    BadInput("mount propagation :rshared", _run("-v", "./src:/src:rshared", "alpine"),
             "propagation"),
    BadInput("--mount with bind-propagation", _run("--mount",
             "type=bind,src=.,dst=/w,bind-propagation=rslave", "alpine"), "bind-propagation"),
    BadInput("--mount with volume-opt", _run("--mount",
             "type=volume,src=v,dst=/v,volume-opt=type=nfs", "alpine"), "volume-opt"),
    BadInput("--mount type=npipe", _run("--mount", "type=npipe,src=p,dst=/p", "alpine"),
             "npipe"),
    BadInput("--mount with an unknown key", _run("--mount", "type=bind,src=.,dst=/w,mode=ro",
             "alpine"), "'mode' is not a key"),
    BadInput("a namespace with capitals", ("run", "--dry-run", "-n", "Team-A", "alpine"),
             "Team-A"),
    BadInput("an argument that is not UTF-8", _run("alpine", "echo", "caf\udce9"),
             "not UTF-8"),
    # --- env files ----------------------------------------------------------------------
    BadInput("an env file that does not exist", _run("--env-file", "missing.env", "alpine"),
             "missing.env"),
    BadInput("an env-file line without a name", _run("--env-file", "vars.env", "alpine"),
             "line 2", files={"vars.env": "A=1\n=secret\n"}),
    BadInput("an env file that is not UTF-8", _run("--env-file", "vars.env", "alpine"),
             "UTF-8", files={"vars.env": b"A=caf\xe9\n"}),
    BadInput("an env file of 2 MiB", _run("--env-file", "vars.env", "alpine"), "1 MiB",
             files={"vars.env": _huge(2 << 20, b"A=1234567\n")}),
    BadInput("/dev/zero as an env file", _run("--env-file", "/dev/zero", "alpine"), "1 MiB"),
    BadInput("a directory as an env file", _run("--env-file", ".", "alpine"), "env file"),
    BadInput("a reserved label in a label file", _run("--label-file", "l.txt", "alpine"),
             "line 2", files={"l.txt": "team=a\nsquarepeg.io/keep=true\n"}),
    BadInput("/dev/zero as a label file", _run("--label-file", "/dev/zero", "alpine"), "1 MiB"),
    # --- config files -------------------------------------------------------------------
    BadInput("a config file that does not exist", _run("--config", "nope.yaml", "alpine"),
             "nope.yaml"),
    BadInput("broken YAML", _run("--config", "c.yaml", "alpine"), "invalid YAML",
             files={"c.yaml": "cpus: 1\nmemory: [1g\n"}),
    BadInput("a config file that is a list", _run("--config", "c.yaml", "alpine"),
             "mapping", files={"c.yaml": "- cpus: 1\n"}),
    BadInput("an unknown key", _run("--config", "c.yaml", "alpine"), "did you mean",
             files={"c.yaml": "cpu: 1\n"}),
    BadInput("a key with the wrong type", _run("--config", "c.yaml", "alpine"), "c.yaml:1",
             files={"c.yaml": "cpus: [1, 2]\n"}),
    BadInput("a duplicate key", _run("--config", "c.yaml", "alpine"), "duplicate",
             files={"c.yaml": "cpus: 1\ncpus: 2\n"}),
    BadInput("an unset ${VAR}", _run("--config", "c.yaml", "alpine"), "NOT_SET",
             files={"c.yaml": "namespace: ${NOT_SET}\n"}),
    BadInput("a ${VAR} that is not a name", _run("--config", "c.yaml", "alpine"),
             "interpolate", files={"c.yaml": "namespace: ${1ST}\n"}),
    BadInput("a ${ without its }", _run("--config", "c.yaml", "alpine"), "interpolate",
             files={"c.yaml": "namespace: ${TEAM\n"}),
    BadInput("a python tag", _run("--config", "c.yaml", "alpine"), "tag",
             files={"c.yaml": "cpus: !!python/object/apply:os.system [id]\n"}),
    BadInput("an int of 5,000 digits", _run("--config", "c.yaml", "alpine"), "out of range",
             files={"c.yaml": "stop_timeout: " + "9" * 5000 + "\n"}),
    BadInput("a bad patch op", _run("--config", "c.yaml", "alpine"), "patches[0]",
             files={"c.yaml": "kubernetes:\n  patches:\n  - {op: upsert, path: /x}\n"}),
    BadInput("a $SQUAREPEG_CONFIG file that does not exist", _run("alpine"), "SQUAREPEG_CONFIG",
             env={"SQUAREPEG_CONFIG": "gone.yaml"}),
    BadInput("a recursive alias", _run("--config", "c.yaml", "alpine"), "refers to itself",
             files={"c.yaml": "kubernetes:\n  spec: &s {x: [*s]}\n"}),
    BadInput("a merge key that merges itself", _run("--config", "c.yaml", "alpine"),
             "own mapping", files={"c.yaml": "kubernetes:\n  spec: &s\n    <<: *s\n"}),
    # --- built to exhaust time or memory ------------------------------------------------
    BadInput("billion laughs (9 levels of 9 aliases)", _run("--config", "c.yaml", "alpine"),
             "aliases", files={"c.yaml": lambda: _laughs(9, "kubernetes:\n  metadata:")}),
    BadInput("billion laughs in unknown keys", _run("--config", "c.yaml", "alpine"),
             "aliases", files={"c.yaml": lambda: _laughs(9)}),
    BadInput("merge keys of merge keys (9 levels)", _run("--config", "c.yaml", "alpine"),
             "labels.m0", files={"c.yaml": _merge_bomb}),
    BadInput("values nested 100 deep", _run("--config", "c.yaml", "alpine"), "64 levels",
             files={"c.yaml": lambda: _nested(100)}),
    BadInput("values nested 100,000 deep", _run("--config", "c.yaml", "alpine"), "nesting",
             files={"c.yaml": lambda: _nested(100_000)}),
    BadInput("a config file of 3 MiB", _run("--config", "c.yaml", "alpine"), "1 MiB",
             files={"c.yaml": _huge(3 << 20)}),
    BadInput("/dev/zero as a config file", _run("--config", "/dev/zero", "alpine"), "1 MiB"),
    BadInput("a 3 MiB project file", _run("alpine"), "1 MiB",
             files={".squarepeg.yaml": _huge(3 << 20)}),
    # --- -d, and the verbs on runs (ps, logs, wait, rm) ---------------------------------
    BadInput("-d --rm with --mode pod: a Pod has no TTL", _run("-d", "--rm", "--mode", "pod",
             "alpine"), "--mode pod"),
    BadInput("logs --since garbage", ("logs", "--since", "yesterday", "my-run"), "--since"),
    BadInput("logs --tail that is not a number", ("logs", "--tail", "-3", "my-run"), "--tail"),
    BadInput("logs of a name no run can have", ("logs", "My_Run"), "cannot be the name"),
    BadInput("wait for a name no run can have", ("wait", "ok-run", "Bad.Name"),
             "cannot be the name"),
    BadInput("rm without a name", ("rm",), "NAME"),
    BadInput("ps in a format docker has and squarepeg not", ("ps", "--format", "{{.Names}}"),
             "--format"),
]


# --- the page ------------------------------------------------------------------------------

DOC = "docs/bad-inputs.md"
_HEADER = """# Bad input, and what squarepeg says

Generated by `scripts/bad-inputs-doc` from the cases in `tests/property/bad_inputs.py`,
which `tests/property/test_bad_inputs.py` runs (the installed `kubectl-squarepeg`, as a
process) and checks against this page: it cannot drift from what squarepeg does. Each
case prints exactly one line on stderr and exits with the code shown; nothing is created.
Files named in a command are in the working directory; the long ones are built by the
case (see its source).

The bad inputs that only the cluster can tell (a NAME that is no squarepeg run, another
user's run, `rm` of a running run without -f) are checked the same way, one line and exit
125, by `tests/e2e/test_detached.py::test_bad_names_are_one_line_and_125` against a cluster.

Beyond these named cases, the property suites in `tests/property/` throw thousands of
generated command lines, config files, env files and kubeconfigs at the same command,
with the same promise: exit 0 with a manifest, or exit 125 with one error line, never a
traceback.

| # | case | command | what squarepeg prints on stderr | exit |
|---|---|---|---|---|
"""


def _cell(text: str) -> str:
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def render(results: list[tuple[BadInput, int, str]]) -> str:
    """The page, from each case with the exit code and the one stderr line it produced."""
    rows = [
        f"| {number} | {case.name} | {_cell(case.command())} | {_cell(line)} | {code} |"
        for number, (case, code, line) in enumerate(results, start=1)
    ]
    return _HEADER + "\n".join(rows) + "\n"
