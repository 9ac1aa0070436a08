"""The flag table against docker's reference, the generated pages, the parser and the keys."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from kubectl_squarepeg.cli import app as cli
from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan import dockerflags, flagdocs
from kubectl_squarepeg.plan.flagrow import Flag

ROOT = Path(__file__).resolve().parents[2]

# Every flag of `docker run`, by name: the flags docker/cli registers for it
# (cli/command/container/opts.go and run.go, v29.x), its hidden aliases --net, --net-alias
# and --dns-opt included, which old scripts still use. Written out here, not derived from the
# table, so that a flag missing from the table fails the test below.
DOCKER_RUN_REFERENCE = """
--add-host --annotation -a --attach --blkio-weight --blkio-weight-device --cap-add --cap-drop
--cgroup-parent --cgroupns --cidfile --cpu-count --cpu-percent --cpu-period --cpu-quota
--cpu-rt-period --cpu-rt-runtime -c --cpu-shares --cpus --cpuset-cpus --cpuset-mems -d
--detach --detach-keys --device --device-cgroup-rule --device-read-bps --device-read-iops
--device-write-bps --device-write-iops --disable-content-trust --dns --dns-option
--dns-opt --dns-search --domainname --entrypoint -e --env --env-file --expose --gpus --group-add
--health-cmd --health-interval --health-retries --health-start-interval --health-start-period
--health-timeout --help -h --hostname --init -i --interactive --io-maxbandwidth --io-maxiops
--ip --ip6 --ipc --isolation --kernel-memory -l --label --label-file --link --link-local-ip
--log-driver --log-opt --mac-address -m --memory --memory-reservation --memory-swap
--memory-swappiness --mount --name --network --net --network-alias --net-alias
--no-healthcheck --oom-kill-disable --oom-score-adj --pid --pids-limit --platform --privileged
-p --publish -P --publish-all --pull -q --quiet --read-only --restart --rm --runtime
--security-opt --shm-size --sig-proxy --stop-signal --stop-timeout --storage-opt --sysctl
--tmpfs -t --tty --ulimit --use-api-socket -u --user --userns --uts -v --volume
--volume-driver --volumes-from -w --workdir
"""

# squarepeg's own flags of `run`, which docker does not have.
SQUAREPEG_ONLY = {
    "-n", "--namespace", "--context", "--kubeconfig", "--mode", "--timeout", "--keep",
    "--dry-run", "--dry-run-server", "--config", "--service-account", "--node-selector",
    "--toleration", "--image-pull-secret", "--priority-class", "--as", "--as-group",
    "--events",
    "--max-runtime", "--secret-env",
}  # fmt: skip


def run_options() -> dict[str, click.Option]:
    return {n: p for p in cli.run.params if isinstance(p, click.Option) for n in p.opts}


def test_the_table_covers_docker_run_reference_exactly_once() -> None:
    docker = [f for f in dockerflags.FLAGS if f.status != "squarepeg"]
    names = [name for flag in docker for name in flag.names]
    assert sorted(names) == sorted(DOCKER_RUN_REFERENCE.split())
    assert len(names) == len(set(names))


def test_squarepegs_own_flags_are_the_rows_that_say_so() -> None:
    own = {n for f in dockerflags.FLAGS if f.status == "squarepeg" for n in f.names}
    assert own == SQUAREPEG_ONLY
    all_names = [n for f in dockerflags.FLAGS for n in f.names]
    assert len(all_names) == len(set(all_names))


def test_the_committed_pages_are_generated_from_the_table() -> None:
    committed = (ROOT / "docs" / "docker-flags.md").read_text(encoding="utf-8")
    assert committed == flagdocs.docker_flags_markdown(), "run scripts/gen-docker-flags"
    assert "(docs/docker-flags.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    flags_page = (ROOT / "docs" / "flags.md").read_text(encoding="utf-8")
    assert flags_page == flagdocs.flags_page(flags_page), "run scripts/gen-docker-flags"
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert configuration == flagdocs.configuration_page(configuration), "run gen-docker-flags"


def test_every_parser_the_table_names_exists() -> None:
    import importlib

    for flag in dockerflags.FLAGS:
        if flag.parse is not None:
            module = importlib.import_module(f"kubectl_squarepeg.plan.{flag.parse.module}")
            assert callable(getattr(module, flag.parse.name)), flag.names


def test_the_config_keys_of_flags_come_from_their_rows() -> None:
    from kubectl_squarepeg.config import keys
    from kubectl_squarepeg.plan.options import CONFIG_KEY

    for flag in dockerflags.FLAGS:
        if flag.key is None:
            assert flag.param not in keys.KEYS or flag.param in keys.OWN_KEYS, flag.param
            continue
        key = keys.KEYS[str(flag.key_name)]
        assert (key.kind, key.form, key.parse) == (flag.key.kind, flag.key.form, flag.parse or str)
        assert CONFIG_KEY.get(flag.param, flag.param) == flag.key_name
        assert (flag.key_name in keys.PATH_KEYS) == flag.key.path
    assert set(keys.KEYS) == set(keys.FLAG_KEYS) | set(keys.OWN_KEYS)


def test_every_docker_flag_is_an_option_of_run_that_the_table_describes() -> None:
    options = run_options()
    for flag in dockerflags.FLAGS:
        for name in flag.names:
            if not flag.is_option:
                continue  # --help: click's own
            assert name in options, name
            assert options[name].hidden == (flag.status == "refused"), name
            assert options[name].is_flag == (not flag.takes_value), name


def test_every_option_of_run_is_dockers_or_squarepegs_own() -> None:
    unknown = set(run_options()) - set(dockerflags.BY_NAME) - SQUAREPEG_ONLY
    assert unknown == set()


@pytest.mark.parametrize(
    "flag", [f for f in dockerflags.FLAGS if f.status == "refused"], ids=lambda f: f.names[-1]
)
def test_each_refused_flag_says_why_and_what_instead(flag: Flag) -> None:
    args = [flag.names[-1], "x"] if flag.takes_value else [flag.names[-1]]
    with pytest.raises(UsageError) as caught:
        cli.run.make_context("run", [*args, "alpine"])
    given = f"{flag.names[0]} x" if flag.takes_value else flag.names[0]
    assert (
        caught.value.message == f"{'/'.join(flag.names)} cannot be used: {flag.meaning} ({given})"
    )
    assert caught.value.hint == flag.note and flag.note


@pytest.mark.parametrize("typo", ["--ini", "--cpu", "--volum", "--health", "--ulimits", "--ipc6"])
def test_did_you_mean_never_offers_a_refused_flag(
    typo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["run", typo, "x", "alpine"])
    assert exited.value.code == 125
    error = capsys.readouterr().err
    assert f"No such option '{typo}'" in error
    assert not any(f"'{name}'" in error for name in dockerflags.REFUSED_NAMES), error


@pytest.mark.parametrize(
    "args", [["--restart", "no"], ["--no-healthcheck"], ["--rm"], ["--disable-content-trust"]]
)
def test_accepted_no_ops_parse(args: list[str]) -> None:
    ctx = cli.run.make_context("run", [*args, "alpine"])
    assert ctx.params["image"] == "alpine"


def test_a_restart_policy_other_than_no_is_refused() -> None:
    with pytest.raises(UsageError, match="--restart always cannot be used"):
        cli.run.make_context("run", ["--restart", "always", "alpine"])


def test_completion_offers_no_refused_flag() -> None:
    from kubectl_squarepeg.cli.completion import complete_words

    offered = {c.value for c in complete_words(cli.cli, ["run", "--"]).candidates}
    assert offered and not offered & dockerflags.REFUSED_NAMES
    assert {"--restart", "--no-healthcheck", "--platform", "--tmpfs"} <= offered


FIVE_MAPPED = ("--dns-option", "--group-add", "--sysctl", "--label-file", "--memory-reservation")


@pytest.mark.parametrize("name", FIVE_MAPPED)
def test_the_five_flags_mapped_later_are_supported_visible_and_completed(name: str) -> None:
    flag = dockerflags.BY_NAME[name]
    assert flag.status in ("supported", "different") and "not mapped" not in flag.meaning
    assert not run_options()[name].hidden
    from kubectl_squarepeg.cli.completion import complete_words

    offered = {c.value for c in complete_words(cli.cli, ["run", name[:6]]).candidates}
    assert name in offered
    assert f"`{name}`" in (ROOT / "docs" / "docker-flags.md").read_text(encoding="utf-8")


def test_dockers_hidden_alias_dns_opt_is_dns_option() -> None:
    ctx = cli.run.make_context("run", ["--dns-opt", "ndots:2", "--dns-option", "rotate", "alpine"])
    assert ctx.params["dns_option"] == ("ndots:2", "rotate")
    assert not re.search(r"--dns-opt\b", cli.run.get_help(ctx))  # hidden, as in docker's help
