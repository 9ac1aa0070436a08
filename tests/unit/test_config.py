"""Config layers: where files are found, interpolation, validation, merge and origins."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_squarepeg.config import files as config
from kubectl_squarepeg.config import trust
from kubectl_squarepeg.config.keys import DEFAULTS
from kubectl_squarepeg.config.merge import Config
from kubectl_squarepeg.config.records import Origin
from kubectl_squarepeg.config.view import view_text
from kubectl_squarepeg.errors import ConfigError
from kubectl_squarepeg.plan.mounts import Tmpfs


def load(*texts: str, environ: dict[str, str] | None = None) -> Config:
    """Files named a.yaml, b.yaml, ... lowest first."""
    named = [(f"{chr(ord('a') + i)}.yaml", text) for i, text in enumerate(texts)]
    return config.from_texts(named, environ or {})


def error(*texts: str, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load(*texts, environ=environ)
    return caught.value.one_line()


# --- layers -------------------------------------------------------------------------------


def test_layer_files_lowest_first(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / "sub" / "dir").mkdir(parents=True)
    (project / ".squarepeg.yaml").write_text("")
    (tmp_path / ".squarepeg.yaml").write_text("")  # farther up: not used
    found = config.sources(
        explicit=["x.yaml", "y.yaml"],
        environ={"SQUAREPEG_CONFIG": os.pathsep.join(["e1.yaml", "", "e2.yaml"])},
        cwd=project / "sub" / "dir",
        home=tmp_path / "home",
        system=tmp_path / "etc.yaml",
    )
    assert [(s.path, s.required, s.why) for s in found] == [
        (str(tmp_path / "etc.yaml"), False, "system"),
        (str(tmp_path / "home" / ".config" / "squarepeg" / "config.yaml"), False, "user"),
        (str(project / ".squarepeg.yaml"), False, "project"),
        ("e1.yaml", True, "$SQUAREPEG_CONFIG"),
        ("e2.yaml", True, "$SQUAREPEG_CONFIG"),
        ("x.yaml", True, "--config"),
        ("y.yaml", True, "--config"),
    ]


@pytest.mark.parametrize(
    ("xdg", "expected"),
    [("/xdg", "/xdg/squarepeg/config.yaml"), ("relative", "HOME/.config/squarepeg/config.yaml")],
)
def test_user_layer_follows_xdg_config_home(tmp_path: Path, xdg: str, expected: str) -> None:
    found = config.sources(environ={"XDG_CONFIG_HOME": xdg}, cwd=tmp_path, home=Path("HOME"))
    assert found[1].path == expected


def test_a_file_named_twice_is_read_once_at_its_highest_place(tmp_path: Path) -> None:
    (tmp_path / ".squarepeg.yaml").write_text("")
    found = config.sources(
        explicit=[str(tmp_path / ".squarepeg.yaml")], environ={}, cwd=tmp_path, home=tmp_path
    )
    assert [s.why for s in found] == ["system", "user", "--config"]


def test_load_reads_every_layer_and_skips_missing_optional_ones(tmp_path: Path) -> None:
    (tmp_path / "etc.yaml").write_text("cpus: 1\nmemory: 1g\n")
    (tmp_path / "xdg" / "squarepeg").mkdir(parents=True)
    (tmp_path / "xdg" / "squarepeg" / "config.yaml").write_text("cpus: 2\n")
    (tmp_path / ".squarepeg.yaml").write_text("gpus: 1\n")
    store = trust.Store.load(tmp_path / "xdg" / "squarepeg")
    store.trust(tmp_path / ".squarepeg.yaml", b"gpus: 1\n")
    store.save()
    (tmp_path / "env.yaml").write_text("mode: job\n")
    (tmp_path / "flag.yaml").write_text("mode: pod\ntimeout: 5m\n")
    merged = config.load(
        explicit=[str(tmp_path / "flag.yaml")],
        environ={
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "SQUAREPEG_CONFIG": str(tmp_path / "env.yaml"),
        },
        cwd=tmp_path,
        home=tmp_path,
        system=tmp_path / "etc.yaml",
    )
    assert {k: merged.values[k] for k in ("cpus", "memory", "gpus", "mode", "timeout")} == {
        "cpus": "2",
        "memory": "1Gi",
        "gpus": 1,
        "mode": "pod",
        "timeout": 300.0,
    }
    assert str(merged.origins["cpus"]) == f"{tmp_path / 'xdg' / 'squarepeg' / 'config.yaml'}:1"
    assert str(merged.origins["mode"]) == f"{tmp_path / 'flag.yaml'}:1"
    assert merged.files[-1] == str(tmp_path / "flag.yaml")


@pytest.mark.parametrize(
    ("explicit", "environ", "message"),
    [
        (["nope.yaml"], {}, "config file nope.yaml does not exist (from --config); check the path"),
        (
            [],
            {"SQUAREPEG_CONFIG": "gone.yaml"},
            "config file gone.yaml does not exist (from $SQUAREPEG_CONFIG); "
            "fix or unset SQUAREPEG_CONFIG",
        ),
    ],
)
def test_missing_explicit_files_are_errors(
    tmp_path: Path, explicit: list[str], environ: dict[str, str], message: str
) -> None:
    os.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        config.load(
            explicit=explicit,
            environ=environ,
            cwd=tmp_path,
            home=tmp_path,
            system=tmp_path / "none",
        )
    assert caught.value.one_line().startswith(message)


def _project(tmp_path: Path, text: str) -> Path:
    (tmp_path / "repo" / "sub").mkdir(parents=True, exist_ok=True)
    path = tmp_path / "repo" / ".squarepeg.yaml"
    path.write_text(text)
    return path


def _load_from_repo(tmp_path: Path, **kwargs: Any) -> Config:
    return config.load(
        environ={"XDG_CONFIG_HOME": str(tmp_path / "xdg")},
        cwd=tmp_path / "repo" / "sub",
        home=tmp_path,
        system=tmp_path / "none",
        **kwargs,
    )


def test_an_untrusted_project_file_is_refused_naming_the_trust_command(tmp_path: Path) -> None:
    path = _project(tmp_path, "cpus: 1\n")
    with pytest.raises(ConfigError) as caught:
        _load_from_repo(tmp_path)
    assert caught.value.one_line().startswith(
        f"the project config file {path} is not trusted; read it, then run "
        f"`kubectl squarepeg config trust {path}` to use it"
    )


def test_a_trusted_project_file_is_used_until_it_changes(tmp_path: Path) -> None:
    path = _project(tmp_path, "cpus: 1\n")
    store = trust.Store.load(tmp_path / "xdg" / "squarepeg")
    store.trust(path, path.read_bytes())
    store.save()
    merged = _load_from_repo(tmp_path)
    assert merged.values["cpus"] == "1"
    assert [f.describe() for f in merged.found] == [f"{path} (project, trusted)"]
    path.write_text("cpus: 1\nprivileged: true\n")
    with pytest.raises(ConfigError, match="changed since you trusted it"):
        _load_from_repo(tmp_path)


def test_config_view_skips_an_untrusted_project_file_and_says_so(tmp_path: Path) -> None:
    path = _project(tmp_path, "cpus: 1\n")
    merged = _load_from_repo(tmp_path, skip_untrusted=True)
    assert "cpus" not in merged.values
    assert view_text(merged).splitlines()[:2] == [
        "# config files, lowest precedence first:",
        f"#   {path} (project, not trusted: not used)",
    ]


def test_other_layers_need_no_trust(tmp_path: Path) -> None:
    (tmp_path / "repo" / "sub").mkdir(parents=True)
    (tmp_path / "xdg" / "squarepeg").mkdir(parents=True)
    (tmp_path / "etc.yaml").write_text("hostname: system\n")
    (tmp_path / "xdg" / "squarepeg" / "config.yaml").write_text("cpus: 2\n")
    (tmp_path / "env.yaml").write_text("gpus: 1\n")
    (tmp_path / "x.yaml").write_text("memory: 1g\n")
    merged = config.load(
        explicit=[str(tmp_path / "x.yaml")],
        environ={
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "SQUAREPEG_CONFIG": f"{tmp_path}/env.yaml",
        },
        cwd=tmp_path / "repo" / "sub",
        home=tmp_path,
        system=tmp_path / "etc.yaml",
    )
    got = [merged.values[key] for key in ("hostname", "cpus", "gpus", "memory")]
    assert got == ["system", "2", 1, "1Gi"]
    assert not (tmp_path / "xdg" / "squarepeg" / "trusted.json").exists()  # nothing trusted


def test_an_unreadable_optional_file_is_an_error(tmp_path: Path) -> None:
    # A directory where the system file should be: there, but not readable as a file.
    with pytest.raises(ConfigError, match=f"cannot read config file {tmp_path}: Is a directory"):
        config.load(environ={}, cwd=tmp_path, home=tmp_path, system=tmp_path)


# --- reading and interpolation ---------------------------------------------------------------


def test_defaults_and_an_empty_file() -> None:
    merged = load("", "# only a comment\n")
    assert merged.values == DEFAULTS
    assert merged.metadata == {} and merged.spec == {} and merged.patches == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "cpus: 1\n  memory: 1g\n",
            "invalid YAML: mapping values are not allowed in this context (a.yaml:2)",
        ),
        ("env: [a\n", "invalid YAML:"),
        (
            "cpus: 1\n---\ncpus: 2\n",
            "a.yaml holds more than one YAML document (another starts at a.yaml:2); a config "
            "file is one mapping: remove that `---` line",
        ),
        (
            "cpus: 1\nx: !Ref foo\n",
            "the YAML tag !Ref is not allowed in a config file (a.yaml:2); remove the tag",
        ),
        ("labels: !custom {a: b}\n", "the YAML tag !custom is not allowed in a config file"),
        (
            "- cpus\n",
            "a config file must be a YAML mapping (a.yaml:1); write keys like `cpus: 0.5`",
        ),
        (
            "cpus: 1\ncpus: 2\n",
            "duplicate key 'cpus' (a.yaml:2, first at line 1); keep one of them",
        ),
        ("a: &x [*x]\n", "a YAML alias refers to itself (a.yaml:1)"),
        ("*a: {}\n", "invalid YAML: found undefined alias (a.yaml:1)"),
    ],
)
def test_unreadable_yaml_names_the_file_and_line(text: str, message: str) -> None:
    assert message in error(text)


def test_yamls_own_tags_are_plain_values() -> None:
    merged = load("cpus: !!str 1\nenv: !!map {A: b}\n")
    assert (merged.values["cpus"], merged.values["env"]) == ("1", {"A": "b"})


def test_yaml_syntax_error_says_how_to_fix() -> None:
    assert error("cpus: 1\n  memory: 1g\n").endswith(
        "; fix the syntax there (indentation, a missing ':' or an unclosed quote are the "
        "usual causes)"
    )


ENVIRON = {"STARTUP": "90s", "EMPTY": "", "CPU": "0.5", "GRACE": "30", "DOLLAR": "$HOME"}


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ("workdir: /w/${STARTUP}\n", "workdir", "/w/90s"),
        ("timeout: ${STARTUP:-300}\n", "timeout", 90.0),
        ("timeout: ${UNSET:-300}\n", "timeout", 300.0),
        ("timeout: ${EMPTY:-5m}\n", "timeout", 300.0),
        ("cpus: ${CPU}\n", "cpus", "500m"),
        ("entrypoint: a$$b\n", "entrypoint", "a$b"),
        ("entrypoint: $${STARTUP}\n", "entrypoint", "${STARTUP}"),
        ("entrypoint: ${DOLLAR}\n", "entrypoint", "$HOME"),  # not interpolated again
        ("entrypoint: $HOME\n", "entrypoint", "$HOME"),  # only ${...} is a reference
        ("env:\n  A: ${EMPTY}\n", "env", {"A": ""}),
        ("cleanup: ${UNSET:-false}\n", "cleanup", False),
    ],
)
def test_interpolation(text: str, key: str, expected: Any) -> None:
    assert load(text, environ=ENVIRON).values[key] == expected


def test_keys_are_never_interpolated() -> None:
    merged = load("env:\n  ${STARTUP}: x\n", environ=ENVIRON)
    assert merged.values["env"] == {"${STARTUP}": "x"}


def test_passthrough_plain_scalars_are_typed_after_interpolation() -> None:
    merged = load(
        "kubernetes:\n  spec:\n    terminationGracePeriodSeconds: ${GRACE}\n"
        '    hostname: "${GRACE}"\n    subdomain: ${EMPTY}\n',
        environ=ENVIRON,
    )
    assert merged.spec == {"terminationGracePeriodSeconds": 30, "hostname": "30", "subdomain": ""}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "timeout: ${STARTUP_SECONDS}\n",
            "${STARTUP_SECONDS} is not set (a.yaml:1); set STARTUP_SECONDS, or give a default: "
            "${STARTUP_SECONDS:-value}",
        ),
        ("kubernetes:\n  spec:\n    hostname: ${NOPE}\n", "${NOPE} is not set (a.yaml:3)"),
        (
            "workdir: /${1BAD}\n",
            "cannot interpolate ${1BAD} (a.yaml:1); "
            "write ${VAR} or ${VAR:-default}, and $$ for a literal $",
        ),
        ("workdir: /${OPEN\n", "cannot interpolate ${ without a closing } (a.yaml:1)"),
        ("workdir: /${A-b}\n", "cannot interpolate ${A-b}"),
    ],
)
def test_interpolation_errors(text: str, message: str) -> None:
    assert message in error(text, environ=ENVIRON)


def test_typed_keys_read_the_text_not_yaml_1_1() -> None:
    merged = load("user: 1000:50\nenv: {A: on, B: 1.10, C: 0755, D: 2024-01-02}\n")
    assert merged.values["user"] == (1000, 50)  # not the sexagesimal 60050
    assert merged.values["env"] == {"A": "on", "B": "1.10", "C": "0755", "D": "2024-01-02"}
    assert merged.display["user"] == "1000:50"


def test_merge_keys_are_followed() -> None:
    merged = load(
        "kubernetes:\n  spec:\n    a: &base {x: 1, y: 2}\n    b:\n      <<: *base\n      y: 3\n"
    )
    assert merged.spec == {"a": {"x": 1, "y": 2}, "b": {"x": 1, "y": 3}}


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cpu: 1\n", "unknown config key 'cpu' (a.yaml:1); did you mean 'cpus'?"),
        (
            "mode: pod\nlabel: {a: b}\n",
            "unknown config key 'label' (a.yaml:2); did you mean 'labels'?",
        ),
        ("service-account: x\n", "did you mean 'service_account'?"),
        ("image_pull_secret: [a]\n", "did you mean 'image_pull_secrets'?"),
        (
            "keep: true\n",
            "unknown config key 'keep' (a.yaml:1); use `cleanup: false` to keep resources",
        ),
        ("name: x\n", "a fixed name would make two runs collide"),
        ("zzz: 1\n", "unknown config key 'zzz' (a.yaml:1); remove it; the keys are the long names"),
        (
            "kubernetes:\n  specs: {}\n",
            "unknown config key 'kubernetes.specs' (a.yaml:2); did you mean 'spec'?",
        ),
    ],
)
def test_unknown_keys(text: str, message: str) -> None:
    assert error(text) == message or message in error(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "timeout: -5\n",
            "invalid value '-5' for timeout (a.yaml:1); a duration cannot be negative",
        ),
        ("mode: deamon\n", "invalid value 'deamon' for mode (a.yaml:1); use pod or job"),
        ("memory: 12x\n", "invalid value '12x' for memory (a.yaml:1); give a size like 512m"),
        ("cpus: [1]\n", "cpus takes a single value (a.yaml:1); give a number of CPUs like 0.5"),
        (
            "user: nobody\n",
            "invalid value 'nobody' for user (a.yaml:1); Kubernetes needs numeric IDs",
        ),
        ("cleanup: maybe\n", "invalid value 'maybe' for cleanup (a.yaml:1); use true or false"),
        ("cleanup: [true]\n", "invalid value 'a list' for cleanup (a.yaml:1); use true or false"),
        ("orphan_sweep_min_age: -1\n", "invalid value '-1' for orphan_sweep_min_age"),
        (
            "job_ttl_seconds_after_finished: true\n",
            "invalid value 'true' for job_ttl_seconds_after_finished",
        ),
        ("env: FOO\n", "env takes a mapping (a.yaml:1); give a mapping like `KEY: value`"),
        ("env: {A: [1]}\n", "env.A must be a single value (a.yaml:1)"),
        ("labels: [team]\n", "invalid labels entry 'team' (a.yaml:1); give a value"),
        (
            "labels:\n  team: -x\n",
            "invalid labels entry 'team=-x' (a.yaml:2); a label value has at most 63",
        ),
        (
            "labels:\n  squarepeg.io/keep: 'true'\n",
            "the label 'squarepeg.io/keep' is reserved for squarepeg (a.yaml:2); "
            "app.kubernetes.io/managed-by and squarepeg.io/* are set by squarepeg itself",
        ),
        ("annotations: {'bad key': x}\n", "invalid annotations entry 'bad key=x' (a.yaml:1)"),
        ("node_selector: {a: null}\n", "invalid node_selector entry 'a' (a.yaml:1); give a value"),
        ("cap_add: {a: 1}\n", "cap_add takes a list (a.yaml:1); give a list of capabilities"),
        ("cap_add: [[a]]\n", "an item of cap_add must be a single value (a.yaml:1)"),
        (
            "tolerations:\n- gpu\n",
            "invalid value 'gpu' for tolerations (a.yaml:2); use KEY[=VALUE]:EFFECT",
        ),
        ("add_host: [x]\n", "invalid value 'x' for add_host (a.yaml:1); use HOST:IP"),
        (
            "group_add: [wheel]\n",
            "invalid value 'wheel' for group_add (a.yaml:1); Kubernetes takes numeric group IDs",
        ),
        ("sysctls: [Bad=1]\n", "invalid value 'Bad=1' for sysctls (a.yaml:1); a sysctl name is"),
        ("dns_options: ['a b']\n", "invalid value 'a b' for dns_options (a.yaml:1)"),
        ("memory_reservation: x\n", "invalid value 'x' for memory_reservation (a.yaml:1)"),
        ("kubernetes: [1]\n", "kubernetes must be a mapping (a.yaml:1)"),
        ("kubernetes:\n  spec: [1]\n", "kubernetes.spec must be a mapping (a.yaml:2)"),
        (
            "kubernetes:\n  patches: {op: add}\n",
            "kubernetes.patches must be a list of operations (a.yaml:2)",
        ),
        (
            "kubernetes:\n  patches:\n  - {op: upsert, path: /x}\n",
            "kubernetes.patches[0] has op 'upsert' (a.yaml:3); use one of add, remove, replace",
        ),
        (
            "kubernetes:\n  patches:\n  - {op: add, path: /x}\n",
            "kubernetes.patches[0] (add) needs 'value' (a.yaml:3)",
        ),
        (
            "kubernetes:\n  patches:\n  - {op: move, path: /x}\n",
            "kubernetes.patches[0] (move) needs 'from'",
        ),
        (
            "kubernetes:\n  patches:\n  - {op: remove, path: spec/x}\n",
            "kubernetes.patches[0] has path 'spec/x' (a.yaml:3); give a JSON pointer",
        ),
        (
            "kubernetes:\n  patches:\n  - {op: add, path: /x, valu: 1}\n",
            "kubernetes.patches[0] has an unknown member 'valu' (a.yaml:3); did you mean 'value'?",
        ),
        ("kubernetes:\n  patches:\n  - 3\n", "kubernetes.patches[0] must be a mapping (a.yaml:3)"),
    ],
)
def test_bad_values_name_file_line_and_accepted_form(text: str, message: str) -> None:
    assert message in error(text)


def test_every_key_validates_like_its_flag() -> None:
    merged = load(
        "mode: JOB\n"
        "cpus: 1.5\n"
        "memory: 512m\n"
        "gpus: count=2\n"
        "pull: missing\n"
        "platform: linux/arm64\n"
        "shm_size: 64m\n"
        "stop_timeout: 10\n"
        "cap_add: net_admin\n"
        "tmpfs: ['/run:size=1m']\n"
        "add_host: ['db:10.0.0.1']\n"
        "dns: [1.1.1.1]\n"
        "dns_search: [example.com]\n"
        "dns_options: [ndots:2, rotate]\n"
        "group_add: [1000, '0']\n"
        "sysctls: [net.ipv4.ip_forward=1]\n"
        "memory_reservation: 256m\n"
        "tolerations: ['gpu:NoSchedule']\n"
        "image_pull_secrets: [regcred]\n"
        "env: [A=1, HOME, UNSET]\n"
        "labels: [team=a]\n"
        "node_selector: {disk: ssd}\n"
        "privileged: yes\n"
        "read_only: 'true'\n",
        environ={"HOME": "/home/me"},
    )
    assert {k: v for k, v in merged.values.items() if k not in DEFAULTS} == {
        "cpus": "1500m",
        "memory": "512Mi",
        "gpus": 2,
        "pull": "IfNotPresent",
        "platform": ("linux", "arm64"),
        "shm_size": "64Mi",
        "stop_timeout": 10,
        "cap_add": ["NET_ADMIN"],
        "tmpfs": [Tmpfs("/run", "1Mi")],
        "add_host": [("db", "10.0.0.1")],
        "dns": ["1.1.1.1"],
        "dns_search": ["example.com"],
        "dns_options": [("ndots", "2"), ("rotate", None)],
        "group_add": [1000, 0],
        "sysctls": [("net.ipv4.ip_forward", "1")],
        "memory_reservation": "256Mi",
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "image_pull_secrets": ["regcred"],
        "env": {"A": "1", "HOME": "/home/me"},
        "labels": {"team": "a"},
        "node_selector": {"disk": "ssd"},
        "privileged": True,
        "read_only": True,
    }
    assert merged.values["mode"] == "job"


def test_env_null_takes_the_local_value() -> None:
    merged = load("env:\n  HOME: null\n  GONE:\n  A: x\n", environ={"HOME": "/h"})
    assert merged.values["env"] == {"HOME": "/h", "A": "x"}


def test_relative_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    path = tmp_path / "conf" / "c.yaml"
    path.write_text("env_file: [.env, /abs/.env]\nkubeconfig: kc\n")
    merged = config.load(
        explicit=[str(path)], environ={}, cwd=tmp_path, home=tmp_path, system=tmp_path / "none"
    )
    assert merged.values["env_file"] == [str(tmp_path / "conf" / ".env"), "/abs/.env"]
    assert merged.values["kubeconfig"] == str(tmp_path / "conf" / "kc")
    assert merged.display["env_file"] == [".env", "/abs/.env"]


# --- merge ------------------------------------------------------------------------------------


def test_scalars_and_lists_replace_mappings_merge() -> None:
    merged = load(
        "cpus: 1\ncap_add: [A, B]\nenv: {X: '1', Y: '1'}\n",
        "cpus: 2\ncap_add: [C]\nenv: {Y: '2', Z: '2'}\n",
    )
    assert merged.values["cpus"] == "2"
    assert merged.values["cap_add"] == ["C"]
    assert merged.values["env"] == {"X": "1", "Y": "2", "Z": "2"}
    assert merged.tree_origins[("env", "X")] == Origin("a.yaml", 3)
    assert merged.tree_origins[("env", "Y")] == Origin("b.yaml", 3)
    assert merged.tree_origins[("cap_add", "0")] == Origin("b.yaml", 2)
    assert ("cap_add", "1") not in merged.tree_origins


def test_null_resets_to_the_default() -> None:
    merged = load("timeout: 10\ncpus: 1\nenv: {A: b}\n", "timeout: null\ncpus: ~\nenv:\n")
    assert merged.values["timeout"] == 300.0
    assert "cpus" not in merged.values and "env" not in merged.values
    assert str(merged.origins["timeout"]) == "default"
    assert ("env", "A") not in merged.tree_origins


def test_passthrough_merges_named_lists_across_layers() -> None:
    merged = load(
        "kubernetes:\n"
        "  spec:\n"
        "    containers:\n"
        "    - name: side\n"
        "      image: busybox\n"
        "      env: [{name: A, value: '1'}]\n"
        "    tolerations: [{key: a}]\n"
        "  metadata:\n"
        "    labels: {team: a}\n",
        "kubernetes:\n"
        "  spec:\n"
        "    containers:\n"
        "    - name: side\n"
        "      env: [{name: B, value: '2'}]\n"
        "    tolerations: [{key: b}]\n",
    )
    assert merged.spec == {
        "containers": [
            {
                "name": "side",
                "image": "busybox",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            }
        ],
        "tolerations": [{"key": "b"}],
    }
    assert merged.metadata == {"labels": {"team": "a"}}
    spec = merged.spec_origins
    assert spec[("containers", "[name=side]", "image")] == Origin("a.yaml", 5)
    assert spec[("containers", "[name=side]", "env", "[name=B]", "value")] == Origin("b.yaml", 5)
    assert spec[("tolerations", "0", "key")] == Origin("b.yaml", 6)
    assert merged.metadata_origins[("labels", "team")] == Origin("a.yaml", 9)


def test_passthrough_null_resets_and_patches_concatenate() -> None:
    add = "kubernetes:\n  patches:\n  - {op: add, path: /spec/hostname, value: %s}\n"
    merged = load(add % "a", add % "b")
    assert [(p.op["value"], p.origin, p.index) for p in merged.patches] == [
        ("a", "a.yaml:3", 0),
        ("b", "b.yaml:3", 0),
    ]
    reset = load(
        add % "a", "kubernetes:\n  patches: null\n  spec: {x: 1}\n", "kubernetes:\n  spec: null\n"
    )
    assert reset.patches == () and reset.spec == {}
    assert load("kubernetes: {spec: {x: 1}}\n", "kubernetes: null\n").spec == {}


# --- config view ---------------------------------------------------------------------------------


VIEW_FILES = (
    "cpus: 0.5\nenv:\n  A: '1'\nkubernetes:\n  spec:\n    containers:\n    - name: side\n"
    "      args: [x]\n",
    "env:\n  B: |\n    two\n    lines\n",
)


def test_config_view_is_the_merged_yaml() -> None:
    merged = load(*VIEW_FILES)
    text = view_text(merged)
    assert yaml.safe_load(text) == {
        "mode": "pod",
        "timeout": 300,
        "cleanup": True,
        "orphan_sweep": True,
        "orphan_sweep_min_age": 300,
        "orphan_sweep_silence": 120,
        "job_ttl_seconds_after_finished": 600,
        "env": {"A": "1", "B": "two\nlines\n"},
        "cpus": 0.5,
        "kubernetes": {
            "metadata": {},
            "spec": {"containers": [{"name": "side", "args": ["x"]}]},
            "patches": [],
        },
    }
    assert "B: |\n" in text


def test_config_view_show_origin_puts_a_comment_on_every_value() -> None:
    text = view_text(load(*VIEW_FILES), show_origin=True)
    assert text.splitlines()[:3] == [
        "# config files, lowest precedence first:",
        "#   a.yaml (text)",
        "#   b.yaml (text)",
    ]
    assert text.splitlines()[3:] == [
        "mode: pod  # default",
        "timeout: 300  # default",
        "cleanup: true  # default",
        "orphan_sweep: true  # default",
        "orphan_sweep_min_age: 300  # default",
        "orphan_sweep_silence: 120  # default",
        "job_ttl_seconds_after_finished: 600  # default",
        "env:  # b.yaml:1",
        "  A: '1'  # a.yaml:3",
        "  B: |  # b.yaml:2",
        "    two",
        "    lines",
        "cpus: 0.5  # a.yaml:1",
        "kubernetes:  # a.yaml:4",
        "  metadata: {}  # default",
        "  spec:  # a.yaml:5",
        "    containers:  # a.yaml:6",
        "    - name: side  # a.yaml:7",
        "      args:  # a.yaml:8",
        "      - x  # a.yaml:8",
        "  patches: []  # default",
    ]
    assert yaml.safe_load(text)["env"]["B"] == "two\nlines\n"


@pytest.mark.parametrize(
    ("key", "answer"),
    [
        ("volumes_from", "docker's --volumes-from is refused: pods share no volumes"),
        ("cpu_shares", "docker's -c/--cpu-shares is refused: Kubernetes weighs CPU by the "
         "request; use --cpus"),
    ],
)  # fmt: skip
def test_a_refused_docker_flag_as_a_key_gets_the_tables_answer(key: str, answer: str) -> None:
    assert error(f"{key}: x\n").startswith(f"unknown config key {key!r} (a.yaml:1); {answer}")
