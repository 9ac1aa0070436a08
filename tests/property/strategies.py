"""Hypothesis strategies for what users give squarepeg: argv lists, config files, env files
and kubeconfigs, each a mix of plausible input, plausible input gone wrong, and junk.

Text is drawn from all of Unicode except NUL (argv and environment strings cannot hold it;
files can, and get it), with lone surrogates standing for the undecodable bytes a real
argv can carry (Python's surrogateescape). Every strategy leans on a list of values that
broke or nearly broke parsers here or elsewhere (TRICKY), so that rare cases are not rare.
"""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import strategies as st

from kubectl_squarepeg.config.keys import ALL_KEYS

TRICKY = [
    "", " ", "-", "--", "=", "==", "0", "-1", "+1", "01", "0x10", "1e400", "-1e400", "nan",
    "inf", "1" * 5000, "9" * 30, "0.0001", "1.10", "²", "٣", "\uff11", "1_000", " 1 ", "a=b=c",
    "${HOME}", "${UNSET}", "${UNSET:-x}", "${", "${}", "${1A}", "$$", "$", "$${X}",
    "\udcff", "é", "🙂", "\u202e", "\u200b", "\ufeff", "\n", "\r", "\t", "KEY", "KEY=",
    "=VALUE", "1:2:3", "1000:", ":1000", "/", "..", "/" * 300, "a" * 64, "a" * 254,
    "x" * 70_000, "on", "no", "~", "null", "true", "[]", "{}", "&a", "*a", "!!python/none",
    "NoSchedule", "key=value:NoExecute", "linux/amd64", "/dev/zero", "/proc/self/mem",
    "always", "missing", "never", "pod", "job", "90s", "5m", "1h30m", "0s", "512m", "1g",
    "1.5g", "0.5", "500m", "10.0.0.2", "::1", "host:10.0.0.5", "NET_ADMIN", "ALL",
    "ndots:2", "net.ipv4.ip_forward=1", "1000", "-1", "9223372036854775808",
]
_NO_NUL = st.characters(blacklist_characters="\x00", codec=None)
_TEXT = st.text(_NO_NUL, max_size=24)
VALUE = st.one_of(st.sampled_from(TRICKY), _TEXT)

# run's options: those that take a value, and switches (cli.py).
VALUED = [
    "--name", "-e", "--env", "--env-file", "-l", "--label", "--annotation", "-w", "--workdir",
    "-u", "--user", "--entrypoint", "--cpus", "-m", "--memory", "--gpus", "--pull",
    "--platform", "--cap-add", "--cap-drop", "--tmpfs", "--shm-size", "-h", "--hostname",
    "--add-host", "--dns", "--dns-search", "--stop-timeout", "--runtime", "-n", "--namespace",
    "--context", "--kubeconfig", "--mode", "--timeout", "--max-runtime", "--config",
    "--service-account",
    "--node-selector", "--toleration", "--image-pull-secret", "--priority-class", "-p",
    "--publish", "--network", "-v", "--volume", "--mount", "--dns-option", "--group-add",
    "--sysctl", "--label-file", "--memory-reservation", "--as", "--as-group", "--stop-signal",
    "--events",
]
SWITCHES = ["--privileged", "--read-only", "--rm", "--keep", "-q", "--quiet", "-P", "-i",
            "-t", "-d", "--dry-run-server", "--cpu", "--bogus", "-Z"]


@st.composite
def _option(draw: st.DrawFn) -> list[str]:
    if draw(st.integers(0, 5)) == 0:
        return [draw(st.sampled_from(SWITCHES))]
    flag = draw(st.sampled_from(VALUED))
    value = draw(VALUE)
    style = draw(st.integers(0, 3))
    if style == 0 and flag.startswith("--"):
        return [f"{flag}={value}"]
    if style == 1 and not flag.startswith("--") and value:  # `-e` alone takes the next word
        return [flag + value]
    return [flag, value]


@st.composite
def run_argv(draw: st.DrawFn) -> list[str]:
    """`run ... --dry-run ... IMAGE [CMD...]`: options around a --dry-run that always comes
    before IMAGE (so a case can never be a real run), sometimes -n, sometimes not."""
    options = [word for option in draw(st.lists(_option(), max_size=8)) for word in option]
    cut = draw(st.integers(0, len(options)))
    namespace = draw(st.sampled_from([[], ["-n", "prop"], ["-n", "prop"]]))
    image = draw(st.one_of(st.sampled_from(["alpine", "alpine:3.19", "python:3.12", "-x",
                                            "", "UPPER", "a b", "--", "ghcr.io/x/y@sha256:"
                                            + "a" * 64]), _TEXT))
    command = draw(st.lists(VALUE, max_size=3))
    if image == "--":
        image = "alpine"  # `--` here would end the options and IMAGE would be next
    return ["run", *options[:cut], "--dry-run", *namespace, *options[cut:], image, *command]


@st.composite
def any_argv(draw: st.DrawFn) -> list[str]:
    """Anything at all after the program name, except a word that could create something:
    a first word other than run/sweep/completion, or `config` followed by junk."""
    first = draw(st.one_of(st.sampled_from(["config", "help", "--help", "--version", "-h",
                                            "RUN", "", "-", "--bogus"]), _TEXT))
    if first in ("run", "sweep"):
        first = "config"
    return [first, *draw(st.lists(VALUE, max_size=6))]


# --- config files ------------------------------------------------------------------------

_KEY = st.one_of(
    st.sampled_from([*ALL_KEYS, "keep", "name", "image", "dry_run", "Memory", "cpu",
                     "kubernetes", "on", "<<", "spec", "env-file", ""]),
    _TEXT,
)
_SCALAR = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True), VALUE,
)
_YAML_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(_TEXT | st.sampled_from(TRICKY), inner,
                                            max_size=4)),
    max_leaves=12,
)


@st.composite
def _kubernetes_value(draw: st.DrawFn) -> Any:
    op = st.fixed_dictionaries(
        {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "x"])},
        optional={"path": st.sampled_from(["/spec/hostname", "/metadata/labels/a", "", "x",
                                           "/spec/containers/0/env/-", "/spec/x~1y"]) | VALUE,
                  "value": _YAML_VALUE, "from": st.sampled_from(["/spec/hostname", "/x"])},
    )
    return draw(st.fixed_dictionaries({}, optional={
        "spec": st.one_of(_YAML_VALUE, st.fixed_dictionaries({}, optional={
            "containers": st.lists(st.fixed_dictionaries({"name": st.sampled_from(
                ["main", "side", ""])}, optional={"image": VALUE, "env": _YAML_VALUE}),
                max_size=2),
            "hostname": VALUE, "terminationGracePeriodSeconds": _SCALAR})),
        "metadata": _YAML_VALUE,
        "patches": st.one_of(st.lists(op, max_size=3), _YAML_VALUE),
        "bogus": _YAML_VALUE,
    }))


@st.composite
def config_document(draw: st.DrawFn) -> Any:
    """A mapping of config keys (known, misspelt, junk) to values of any type."""
    known = st.sampled_from(ALL_KEYS)
    keys = draw(st.lists(st.one_of(known, known, _KEY), max_size=6, unique=True))
    doc: dict[Any, Any] = {}
    for key in keys:
        doc[key] = draw(_kubernetes_value() if key == "kubernetes" else _YAML_VALUE)
    return doc


_BREAKERS = [":", "-", " ", "\n", "\t", "{", "}", "[", "]", "&a", "*a", "!", "|", ">", "'",
             '"', "%", "@", "`", "#", "<<: *a", "---", "...", "?", ",", "\x00", "\ufeff",
             "\udcff", "${", "\\"]


@st.composite
def config_text(draw: st.DrawFn) -> bytes:
    """A config file's bytes: a dumped document, that document with a few edits that
    usually break it, junk text, or junk bytes."""
    kind = draw(st.integers(0, 9))
    if kind == 9:
        return draw(st.binary(max_size=200))
    if kind == 8:
        return draw(st.text(max_size=200)).encode("utf-8", "surrogatepass")
    text = yaml.safe_dump(draw(config_document()), allow_unicode=draw(st.booleans()),
                          default_flow_style=draw(st.sampled_from([None, False, True])),
                          sort_keys=False)
    for _ in range(draw(st.integers(0, 3) if kind < 5 else st.just(0))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 3))
        text = text[:at] + draw(st.sampled_from(_BREAKERS)) + text[at + cut:]
    return text.encode("utf-8", "surrogatepass")


ENV_NAMES = st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True)
def _can_be_in_environ(value: str) -> bool:
    """A real environment holds bytes: no NUL, and no surrogate that is not an escaped
    byte (os.environ refuses '\ud800')."""
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


INTERPOLATION_ENV = st.dictionaries(ENV_NAMES | st.sampled_from(["HOME", "UNSET", "X"]),
                                    VALUE.filter(_can_be_in_environ), max_size=4)


# --- env files and kubeconfigs -----------------------------------------------------------

_ENV_LINE = st.one_of(
    st.builds(lambda k, v: f"{k}={v}", ENV_NAMES, VALUE),
    ENV_NAMES,
    st.sampled_from(["# comment", "", "   ", "=x", "BAD KEY=1", "export A=1", "A", "\ufeffA=1",
                     "A=1\r", " A=2", "A =3", "é=1", "A=" + "x" * 70_000]),
    _TEXT,
)


@st.composite
def env_file(draw: st.DrawFn) -> bytes:
    """A docker env file's bytes: lines of KEY=VALUE, bare KEYs, comments, junk; sometimes
    not UTF-8, sometimes with NUL or CRLF."""
    lines = draw(st.lists(_ENV_LINE, max_size=8))
    ending = draw(st.sampled_from(["\n", "\r\n", "\n", "\n"]))
    data = ending.join(lines).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        data += draw(st.binary(max_size=20))
    return data


_KUBE_NAME = st.one_of(st.sampled_from(["prop", "dev", "", "Bad NS!", "a" * 300, "default"]),
                       _TEXT)


@st.composite
def kubeconfig_text(draw: st.DrawFn) -> bytes:
    """A kubeconfig's bytes: well-formed with odd names and namespaces, or broken."""
    contexts = draw(st.lists(_KUBE_NAME, max_size=3))
    doc: dict[str, Any] = {
        "apiVersion": draw(st.sampled_from(["v1", "v2", "", None])),
        "kind": draw(st.sampled_from(["Config", "Pod", None])),
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": name, "context": {"cluster": "c", "user": "u",
                                                 "namespace": draw(_KUBE_NAME)}}
                     for name in contexts],
        "current-context": draw(st.one_of(st.sampled_from(contexts or ["none"]), _KUBE_NAME)),
    }
    if draw(st.integers(0, 5)) == 0:
        doc["contexts"] = draw(_YAML_VALUE)
    text = yaml.safe_dump(doc, allow_unicode=True)
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(_BREAKERS)) + text[at + 1:]
    return text.encode("utf-8", "surrogatepass")
