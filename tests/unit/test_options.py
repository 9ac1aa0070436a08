"""RunOptions: flags laid over config, multi-valued merges, cross-field checks, flag errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kubectl_squarepeg.config import files as config
from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan import rules
from kubectl_squarepeg.plan.mounts import Tmpfs
from kubectl_squarepeg.plan.options import RunOptions, build_run_options, flag_name

# click's parameters of `run` that are repeatable (a tuple) or switches (a bool).
MULTIPLE = (
    "env",
    "env_file",
    "label",
    "annotation",
    "cap_add",
    "cap_drop",
    "tmpfs",
    "add_host",
    "dns",
    "dns_search",
    "config",
    "node_selector",
    "toleration",
    "image_pull_secret",
    "label_file",
    "dns_option",
    "group_add",
    "sysctl",
)
SWITCHES = ("privileged", "read_only", "rm", "keep", "dry_run", "dry_run_server", "quiet")
SCALARS = (
    "name",
    "workdir",
    "user",
    "entrypoint",
    "cpus",
    "memory",
    "memory_reservation",
    "gpus",
    "pull",
    "platform",
    "shm_size",
    "hostname",
    "stop_timeout",
    "runtime",
    "namespace",
    "context",
    "kubeconfig",
    "mode",
    "timeout",
    "service_account",
    "priority_class",
)
FILES = {
    "/f/a.env": "A=file\nB=file\n",
    "/f/b.env": "B=flagfile\nC=flagfile\nLOCAL\n",
    "/f/a.labels": "\ufeff# team labels\n\nteam=a\n  owner=x\nflag\ntier=file\n",
    "/f/reserved.labels": "team=a\nsquarepeg.io/run-id=x\n",
    "/f/bad.labels": "team=a\n\nbad key=1\n",
    "/f/value.labels": "team=not a value\n",
}
ENVIRON = {"LOCAL": "here", "HOME": "/home/me"}


def read_text(path: str) -> str:
    if path not in FILES:
        raise FileNotFoundError(2, "No such file or directory", path)
    return FILES[path]


def options(
    *conf_texts: str, image: str = "alpine", command: tuple[str, ...] = (), **given: Any
) -> RunOptions:
    """`run` with the flags `given` on the command line, over config files' texts."""
    flags: dict[str, Any] = {p: () for p in MULTIPLE}
    flags |= {p: False for p in SWITCHES} | {p: None for p in SCALARS}
    flags |= {"image": image, "command": command, **given}
    merged = config.from_texts([(f"c{i}.yaml", t) for i, t in enumerate(conf_texts)], ENVIRON)
    built = build_run_options(
        flags, {*given, "image", "command"}, merged, environ=ENVIRON, read_text=read_text
    )
    rules.validate(built, rules.Asked(rm=bool(given.get("rm")), keep=bool(given.get("keep"))))
    return built


def usage_error(*conf_texts: str, **given: Any) -> str:
    with pytest.raises(UsageError) as caught:
        options(*conf_texts, **given)
    return caught.value.one_line()


def test_defaults() -> None:
    o = options()
    assert (o.image, o.command, o.name, o.mode, o.timeout, o.keep, o.quiet) == (
        "alpine",
        (),
        None,
        "pod",
        300.0,
        False,
        False,
    )
    assert (o.orphan_sweep, o.orphan_sweep_min_age, o.job_ttl_seconds_after_finished) == (
        True,
        300,
        600,
    )
    assert o.explicit == frozenset({"image"})


def test_a_flag_beats_config_and_config_beats_the_default() -> None:
    conf = "cpus: 1\nmemory: 1g\ntimeout: 5m\nmode: job\nuser: '1000'\n"
    o = options(conf, cpus="0.5", timeout="90s")
    assert (o.cpus, o.memory, o.timeout, o.mode, o.user) == (
        "500m",
        "1Gi",
        90.0,
        "job",
        (1000, None),
    )
    assert {"cpus", "timeout", "image"} <= o.explicit
    assert "memory" not in o.explicit


def test_every_flag_value_is_parsed() -> None:
    o = options(
        name="my-run",
        workdir="/w",
        user="1:2",
        entrypoint="/bin/sh",
        gpus="1",
        pull="never",
        platform="linux/arm64",
        privileged=True,
        read_only=True,
        cap_add=("net_admin",),
        cap_drop=("ALL",),
        tmpfs=("/t:size=1m",),
        shm_size="64m",
        hostname="box",
        add_host=("db:10.0.0.1",),
        dns=("1.1.1.1",),
        dns_search=("example.com",),
        stop_timeout="5",
        runtime="gvisor",
        namespace="team",
        context="ctx",
        kubeconfig="kc",
        service_account="sa",
        node_selector=("disk=ssd",),
        toleration=("gpu:NoSchedule",),
        image_pull_secret=("regcred",),
        priority_class="high",
        annotation=("a.io/b=c",),
        quiet=True,
        dry_run=True,
        config=("x.yaml",),
    )
    assert (o.name, o.workdir, o.user, o.entrypoint, o.gpus, o.pull, o.platform) == (
        "my-run",
        "/w",
        (1, 2),
        "/bin/sh",
        1,
        "Never",
        ("linux", "arm64"),
    )
    assert (o.privileged, o.read_only, o.cap_add, o.cap_drop, o.tmpfs, o.shm_size) == (
        True,
        True,
        ("NET_ADMIN",),
        ("ALL",),
        (Tmpfs("/t", "1Mi"),),
        "64Mi",
    )
    assert (o.hostname, o.add_host, o.dns, o.dns_search, o.stop_timeout, o.runtime) == (
        "box",
        (("db", "10.0.0.1"),),
        ("1.1.1.1",),
        ("example.com",),
        5,
        "gvisor",
    )
    assert (o.namespace, o.context, o.kubeconfig, o.service_account, o.priority_class) == (
        "team",
        "ctx",
        "kc",
        "sa",
        "high",
    )
    assert o.node_selector == {"disk": "ssd"}
    assert o.tolerations == ({"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},)
    assert (o.image_pull_secrets, o.annotations) == (("regcred",), {"a.io/b": "c"})
    assert (o.quiet, o.dry_run, o.config_paths) == (True, True, ("x.yaml",))


def test_mapping_flags_merge_per_key_over_config_and_record_their_keys() -> None:
    o = options("labels: {team: a, tier: web}\n", label=("tier=db", "new=1"))
    assert o.labels == {"team": "a", "tier": "db", "new": "1"}
    assert o.cli_keys["label"] == {"tier": "--label", "new": "--label"}


def test_env_order_is_env_file_then_env_then_flag_files_then_flags() -> None:
    conf = "env_file: [/f/a.env]\nenv: {B: conf, D: conf}\n"
    o = options(conf, env_file=("/f/b.env",), env=("C=flag", "HOME", "UNSET"))
    assert o.env == {
        "A": "file",
        "B": "flagfile",
        "D": "conf",
        "C": "flag",
        "LOCAL": "here",
        "HOME": "/home/me",
    }
    assert o.cli_keys["env"] == {
        "B": "--env-file",
        "C": "--env",
        "LOCAL": "--env-file",
        "HOME": "--env",
    }


def test_list_flags_add_to_config_without_repeats() -> None:
    o = options(
        "cap_add: [NET_ADMIN, SYS_TIME]\ndns: [8.8.8.8]\n",
        cap_add=("net_admin", "CHOWN"),
        dns=("1.1.1.1",),
    )
    assert o.cap_add == ("NET_ADMIN", "SYS_TIME", "CHOWN")
    assert o.dns == ("8.8.8.8", "1.1.1.1")


def test_a_tmpfs_flag_replaces_config_at_the_same_path() -> None:
    o = options("tmpfs: ['/a:size=1m', /b]\n", tmpfs=("/a:size=2m",))
    assert o.tmpfs == (Tmpfs("/b"), Tmpfs("/a", "2Mi"))


@pytest.mark.parametrize(
    ("conf", "given", "keep"),
    [
        ("", {}, False),
        ("", {"keep": True}, True),
        ("cleanup: false\n", {}, True),
        ("cleanup: false\n", {"rm": True}, False),
        ("cleanup: true\n", {"keep": True}, True),
    ],
)
def test_keep_from_flags_and_cleanup(conf: str, given: Mapping[str, Any], keep: bool) -> None:
    assert options(conf, **given).keep is keep


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"name": "Bad_Name"}, "invalid value 'Bad_Name' for --name; use lowercase letters"),
        ({"cpus": "lots"}, "invalid value 'lots' for --cpus; give a number of CPUs like 0.5"),
        ({"memory": "12x"}, "invalid value '12x' for --memory; give a size like 512m"),
        ({"user": "nobody"}, "invalid value 'nobody' for --user; Kubernetes needs numeric IDs"),
        ({"timeout": "-5"}, "invalid value '-5' for --timeout; a duration cannot be negative"),
        ({"gpus": "all"}, "invalid value 'all' for --gpus; Kubernetes schedules GPUs by count"),
        ({"mode": "deamon"}, "invalid value 'deamon' for --mode; use pod or job"),
        ({"env": ("=x",)}, "invalid value '=...' for --env; '' is not a variable name"),
        ({"label": ("=team",)}, "invalid value '=team' for --label; the key before '=' is empty"),
        (
            {"label": ("squarepeg.io/keep=true",)},
            "--label squarepeg.io/keep touches a label reserved for squarepeg; "
            "app.kubernetes.io/managed-by and squarepeg.io/* are set by squarepeg itself",
        ),
        ({"label": ("app.kubernetes.io/managed-by=me",)}, "touches a label reserved for squarepeg"),
        (
            {"env_file": ("/f/none.env",)},
            "cannot read the env file '/f/none.env' (--env-file): No such file or directory; "
            "give the path of a readable file",
        ),
        (
            {"dry_run": True, "dry_run_server": True},
            "--dry-run and --dry-run-server cannot be used together; pass --dry-run to print",
        ),
        ({"rm": True, "keep": True}, "--rm and --keep contradict each other"),
        ({"image": "-it"}, "IMAGE '-it' starts with '-'; put squarepeg's flags before IMAGE"),
        ({"image": " "}, "IMAGE is empty"),
        (
            {"shm_size": "64m", "tmpfs": ("/dev/shm",)},
            "--shm-size and a tmpfs at /dev/shm both mount /dev/shm",
        ),
        ({"tmpfs": ("/a", "/a:ro")}, "--tmpfs /a is given twice with different options"),
        ({"workdir": "app"}, "invalid value 'app' for --workdir; the working directory must be"),
        ({"platform": "linux/arm/v7/x"}, "invalid value 'linux/arm/v7/x' for --platform"),
    ],
)
def test_bad_flags_are_usage_errors_naming_the_flag(given: dict[str, Any], message: str) -> None:
    assert message in usage_error(**given)


def test_bad_config_env_file_names_the_config_line() -> None:
    text = usage_error("env_file: /f/missing.env\n")
    assert text.startswith("cannot read the env file '/f/missing.env' (env_file, c0.yaml:1)")


def test_command_and_explicit() -> None:
    o = options(command=("ls", "-l", "--help"), cpus="1", privileged=True, env=())
    assert o.command == ("ls", "-l", "--help")
    assert o.explicit == frozenset({"image", "command", "cpus", "privileged"})


@pytest.mark.parametrize(
    ("param", "flag"), [("cap_add", "--cap-add"), ("image", "IMAGE"), ("command", "COMMAND")]
)
def test_flag_names(param: str, flag: str) -> None:
    assert flag_name(param) == flag


# --- docker's meanings, and one source per field ---------------------------------------------


def test_zero_cpus_and_memory_mean_no_limit_and_clear_config() -> None:
    o = options("cpus: 2\nmemory: 1g\n", cpus="0", memory="0")
    assert (o.cpus, o.memory) == (None, None)
    assert options("cpus: 0\nmemory: 0\n").memory is None


def test_platform_and_a_node_selector_for_the_same_label_are_an_error_naming_both() -> None:
    assert usage_error(platform="linux/arm64", node_selector=("kubernetes.io/arch=amd64",)) == (
        "--platform and --node-selector kubernetes.io/arch=... both set the node selector "
        "kubernetes.io/arch; give one of them"
    )
    # A config value is a default: either flag simply wins over it.
    assert options("platform: linux/amd64\n", node_selector=("kubernetes.io/arch=arm64",))


def test_tmpfs_paths_are_compared_normalised() -> None:
    assert "given twice" in usage_error(tmpfs=("/run", "//run/:size=1m"))
    assert "both mount /dev/shm" in usage_error(tmpfs=("/dev/shm/",), shm_size="64m")
    o = options("tmpfs: ['/run/:size=1m']\n", tmpfs=("//run",))
    assert o.tmpfs == (Tmpfs("/run"),)  # the flag's mount replaces config's at that path


def test_an_empty_entrypoint_needs_a_command() -> None:
    assert options(entrypoint="", command=("sh", "-c", "true")).entrypoint == ""
    assert usage_error(entrypoint="").startswith(
        '--entrypoint "" resets the image\'s entrypoint and leaves nothing to run'
    )


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ("Alpine", "invalid IMAGE 'Alpine'; docker calls this an invalid reference format: the "
         "repository name (Alpine) must be lowercase; use alpine"),
        ("alpine:", "invalid IMAGE 'alpine:'; docker calls this an invalid reference format"),
    ],
)  # fmt: skip
def test_docker_invalid_images_are_usage_errors(image: str, message: str) -> None:
    assert usage_error(image=image).startswith(message)


# --- the five flags mapped after the first release ------------------------------------------


def test_dns_options_group_add_and_sysctls_parse_and_add_to_config() -> None:
    conf = "dns_options: [ndots:5]\ngroup_add: [10]\nsysctls: [kernel.shm_rmid_forced=1]\n"
    o = options(
        conf,
        dns_option=("ndots:2", "rotate"),
        group_add=("1000", "10"),
        sysctl=("net.ipv4.ip_forward=1", "kernel.shm_rmid_forced=0", "net/ipv4/tcp_syncookies=1"),
    )
    assert o.dns_options == (("ndots", "5"), ("ndots", "2"), ("rotate", None))
    assert o.group_add == (10, 1000)
    # A --sysctl replaces config's value of the same sysctl; the last one given wins.
    assert o.sysctls == (
        ("net.ipv4.ip_forward", "1"),
        ("kernel.shm_rmid_forced", "0"),
        ("net/ipv4/tcp_syncookies", "1"),
    )
    assert options(sysctl=("a.b=1", "a.b=2")).sysctls == (("a.b", "2"),)


def test_label_files_sit_between_config_labels_and_label_flags() -> None:
    o = options(
        "labels: {team: conf, site: conf}\n", label_file=("/f/a.labels",), label=("tier=flag",)
    )
    assert o.labels == {"team": "a", "site": "conf", "owner": "x", "flag": "", "tier": "flag"}
    assert o.cli_keys["label"] == {
        "team": "--label-file",
        "owner": "--label-file",
        "flag": "--label-file",
        "tier": "--label",
    }


def test_more_nameservers_or_search_domains_than_kubernetes_takes_are_refused() -> None:
    four = ("1.1.1.1", "1.0.0.1", "8.8.8.8", "8.8.4.4")
    assert options(dns=four[:3]).dns == four[:3]
    assert usage_error("dns: [9.9.9.9]\n", dns=four[:3]).startswith(
        "--dns: 4 nameservers in all (config's `dns` included); Kubernetes takes at most 3"
    )
    domains = tuple(f"d{i}.example.com" for i in range(33))
    assert len(options(dns_search=domains[:32]).dns_search) == 32
    assert usage_error(dns_search=domains).startswith("--dns-search: 33 search domains in all")
    # 9 names of 227 characters are 2,051 with the spaces: the API server's limit is 2,048.
    long = tuple(f"{i}{'.a' * 113}" for i in range(9))
    assert len(options(dns_search=long[:8]).dns_search) == 8
    assert usage_error(dns_search=long).startswith(
        "--dns-search: the search domains in all (config's `dns_search` included) come to 2051 "
        "characters with a space between each; Kubernetes takes at most 2048"
    )


def test_a_bare_label_or_annotation_key_has_the_empty_value_as_in_docker() -> None:
    # docker's documented `docker run -l my-label --label com.example.foo=bar ubuntu bash`
    o = options(label=("my-label", "com.example.foo=bar"), annotation=("example.com/note",))
    assert o.labels == {"my-label": "", "com.example.foo": "bar"}
    assert o.annotations == {"example.com/note": ""}


def test_memory_reservation_alone_with_a_limit_and_from_config() -> None:
    assert options(memory_reservation="256m").memory_reservation == "256Mi"
    o = options(memory="1g", memory_reservation="1024m")
    assert (o.memory, o.memory_reservation) == ("1Gi", "1024Mi")
    assert options("memory_reservation: 128m\n").memory_reservation == "128Mi"
    assert options(memory_reservation="0").memory_reservation is None


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"group_add": ("wheel",)},
            "invalid value 'wheel' for --group-add; Kubernetes takes numeric group IDs only",
        ),
        ({"group_add": ("-1",)}, "invalid value '-1' for --group-add; it cannot be negative"),
        (
            {"group_add": (str(2**63),)},
            f"invalid value '{2**63}' for --group-add; Kubernetes stores at most {2**63 - 1}",
        ),
        (
            {"group_add": (str(2**31),)},
            f"invalid value '{2**31}' for --group-add; Kubernetes stores user and group IDs up "
            f"to {2**31 - 1} (2^31-1)",
        ),
        (
            {"sysctl": ("Net.IPv4.x=1",)},
            "invalid value 'Net.IPv4.x=1' for --sysctl; a sysctl name is lowercase letters",
        ),
        ({"sysctl": ("net..x=1",)}, "invalid value 'net..x=1' for --sysctl"),
        ({"sysctl": ("a." * 127 + "b=1",)}, "for --sysctl; a sysctl name is"),
        ({"sysctl": ("net.ipv4.ip_forward",)}, "for --sysctl; use KEY=VALUE"),
        ({"dns_option": (":2",)}, "invalid value ':2' for --dns-option; give a resolv.conf option"),
        ({"dns_option": ("ndots:",)}, "invalid value 'ndots:' for --dns-option"),
        ({"dns_option": ("a b",)}, "invalid value 'a b' for --dns-option"),
        (
            {"memory": "1g", "memory_reservation": "2g"},
            "--memory-reservation 2Gi is larger than the -m limit 1Gi (Kubernetes refuses a "
            "memory request above the limit)",
        ),
        ({"memory_reservation": "lots"}, "invalid value 'lots' for --memory-reservation"),
        (
            {"label_file": ("/f/none.labels",)},
            "cannot read the label file '/f/none.labels' (--label-file): No such file",
        ),
        (
            {"label_file": ("/f/bad.labels",)},
            "invalid label 'bad key=1' (--label-file /f/bad.labels, line 3); a key is NAME",
        ),
        (
            {"label_file": ("/f/value.labels",)},
            "invalid label 'team=not a value' (--label-file /f/value.labels, line 1); a label",
        ),
        (
            {"label_file": ("/f/reserved.labels",)},
            "the label squarepeg.io/run-id (--label-file /f/reserved.labels, line 2) is reserved "
            "for squarepeg; app.kubernetes.io/managed-by and squarepeg.io/* are set by squarepeg",
        ),
    ],
)
def test_bad_values_of_the_five_flags_are_one_line_naming_the_flag(
    given: dict[str, Any], message: str
) -> None:
    text = usage_error(**given)
    assert message in text and "\n" not in text


def test_a_memory_reservation_over_a_config_limit_is_refused_too() -> None:
    assert "is larger than the -m limit 512Mi" in usage_error(
        "memory: 512m\n", memory_reservation="1g"
    )
    # -m 0 (no limit) lets any reservation through.
    assert options("memory: 512m\n", memory="0", memory_reservation="1g").memory is None


def test_a_flag_whose_row_says_how_it_merges_reaches_table_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kubectl_squarepeg.plan import dockerflags
    from kubectl_squarepeg.plan.flagrow import Parser, own

    rows = (
        own("--shade", "a test row", metavar="X", parse=Parser("images", "parse_pull"),
            merge="scalar"),
        own("--tints", "a test row", metavar="X", many=True, merge="listing"),
        own("--matte", "a test row", merge="switch"),
    )  # fmt: skip
    monkeypatch.setattr(dockerflags, "FLAGS", (*dockerflags.FLAGS, *rows))
    ours = ("shade", "tints", "matte")
    o = options(shade="missing", tints=("a", "b", "a"), matte=True)
    assert [o.table_values[p] for p in ours] == ["IfNotPresent", ("a", "b"), True]
    assert [options().table_values[p] for p in ours] == [None, (), False]
    assert "for --shade" in usage_error(shade="sometimes")
