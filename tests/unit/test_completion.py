"""completion.py without processes: what a <TAB> is answered, on the real command tree and
on a small tree of its own, and the text the helper prints for kubectl."""

from __future__ import annotations

import click
import pytest

from kubectl_squarepeg.cli import completion
from kubectl_squarepeg.cli.app import cli
from kubectl_squarepeg.cli.completion import (
    DIRECTIVE_DEFAULT,
    DIRECTIVE_ERROR,
    DIRECTIVE_FILTER_DIRS,
    DIRECTIVE_NO_FILE_COMP,
    Candidate,
    Completions,
    complete_words,
    render_for_kubectl,
)


def values(*words: str, tree: click.Command = cli) -> list[str]:
    return [c.value for c in complete_words(tree, words).candidates]


# --- the real command tree -------------------------------------------------------------------


def test_a_new_word_after_the_plugin_name_offers_the_subcommands() -> None:
    answer = complete_words(cli, [""])
    assert {"run", "config", "completion"} <= {c.value for c in answer.candidates}
    assert answer.directive == DIRECTIVE_NO_FILE_COMP


def test_no_words_at_all_is_a_new_first_word() -> None:
    assert values() == values("")


def test_subcommands_come_with_their_short_help() -> None:
    run = next(c for c in complete_words(cli, ["ru"]).candidates if c.value == "run")
    assert run.help and "\t" not in run.help and "\n" not in run.help


def test_run_offers_its_docker_style_flags() -> None:
    offered = values("run", "--")
    for flag in ("--env", "--dry-run", "--mode", "--pull", "--namespace", "--keep", "--timeout",
                 "--interactive", "--tty"):
        assert flag in offered


def test_a_prefix_narrows_the_flags() -> None:
    assert values("run", "--dry") == ["--dry-run", "--dry-run-server"]


def test_refused_docker_flags_are_not_offered() -> None:
    offered = values("run", "--")
    assert "--publish-all" not in offered and "--volumes-from" not in offered
    assert "--publish" in offered  # supported since issue 23
    assert "--detach-keys" not in offered


def test_fixed_values_complete_from_the_metavar() -> None:
    assert values("run", "--mode", "") == ["pod", "job"]
    assert values("run", "--pull", "m") == ["missing"]


def test_a_value_written_with_equals_gets_bare_values() -> None:
    # cobra answers `--mode=j` with `job`; the shell scripts put `--mode=` back themselves.
    assert values("run", "--mode=j") == ["job"]


def test_an_option_value_is_not_mistaken_for_image() -> None:
    assert "--dry-run" in values("run", "-e", "A=1", "--name", "x", "--d")


def test_nothing_is_offered_after_image_it_is_the_containers_command() -> None:
    answer = complete_words(cli, ["run", "alpine", "--"])
    assert answer == Completions((), DIRECTIVE_NO_FILE_COMP)
    assert values("run", "--", "alpine", "-") == []


def test_a_local_file_option_lets_the_shell_complete_file_names() -> None:
    for flag in ("--env-file", "--label-file", "--config", "--kubeconfig"):
        assert complete_words(cli, ["run", flag, ""]) == Completions((), DIRECTIVE_DEFAULT)


def test_a_path_inside_the_container_gets_no_local_file_names() -> None:
    assert complete_words(cli, ["run", "--workdir", ""]).directive == DIRECTIVE_NO_FILE_COMP


def test_nested_groups_and_their_flags() -> None:
    assert values("config", "") == ["trust", "untrust", "view"]
    assert "--show-origin" in values("config", "view", "--")


def test_the_completion_command_completes_its_shells() -> None:
    assert values("completion", "") == list(completion.SHELLS)


def test_the_cli_command_accepts_exactly_the_shells_there_are_scripts_for() -> None:
    command = cli.commands["completion"]
    shell = next(p for p in command.params if p.name == "shell")
    assert isinstance(shell.type, click.Choice)
    assert tuple(shell.type.choices) == completion.SHELLS


# --- a tree of its own: the generic rules --------------------------------------------------


@click.group()
def toy() -> None:
    """A toy."""


@toy.command(context_settings={"allow_interspersed_args": False})
@click.option("--color", type=click.Choice(["red", "green"]))
@click.option("--out", type=click.Path(file_okay=False))
@click.option("--log", type=click.File("w"))
@click.option("-v", "--verbose", count=True)
@click.option("--fast", is_flag=True)
@click.argument("target")
@click.argument("rest", nargs=-1)
def go(**_: object) -> None:
    """Go somewhere."""


@toy.command()
@click.argument("names", nargs=-1)
@click.option("--all", is_flag=True)
def tidy(**_: object) -> None:
    """Tidy up."""


def test_a_click_choice_completes_with_clicks_own_values() -> None:
    assert values("go", "--color", "", tree=toy) == ["red", "green"]


def test_a_directory_option_asks_for_directory_names() -> None:
    assert complete_words(toy, ["go", "--out", ""]).directive == DIRECTIVE_FILTER_DIRS


def test_a_file_option_asks_for_file_names() -> None:
    assert complete_words(toy, ["go", "--log", ""]).directive == DIRECTIVE_DEFAULT


def test_counters_and_flags_take_no_value() -> None:
    # `x` is TARGET, not the value of -v or --fast, so the command has its argument...
    assert values("go", "-v", "x", "--", tree=toy) == []
    assert values("go", "--fast", "x", "--", tree=toy) == []
    # ...while the word after --color is its value, and TARGET is still to come.
    assert "--fast" in values("go", "--color", "red", "--", tree=toy)


def test_only_a_command_that_stops_at_its_argument_goes_quiet_after_it() -> None:
    assert values("go", "somewhere", "--", tree=toy) == []
    assert values("tidy", "one", "--", tree=toy) == ["--all", "--help"]


# --- what the helper prints ------------------------------------------------------------------


def test_kubectl_gets_value_tab_help_lines_then_the_directive() -> None:
    answer = Completions((Candidate("run", "Run it."), Candidate("--keep")), 4)
    assert render_for_kubectl(answer) == "run\tRun it.\n--keep\n:4\n"


def test_an_empty_answer_is_just_the_directive() -> None:
    assert render_for_kubectl(Completions((), DIRECTIVE_DEFAULT)) == ":0\n"


def test_the_helper_prints_its_answer_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        completion.complete_main(cli, ["run", "--dry"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == "--dry-run\tPrint the manifest; create nothing.\n" + (
        "--dry-run-server\tHave the apiserver check the manifest.\n:4\n"
    )


def test_a_failure_in_the_helper_is_an_error_directive_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> Completions:
        raise RuntimeError("boom")

    monkeypatch.setattr(completion, "complete_words", broken)
    with pytest.raises(SystemExit) as exited:
        completion.complete_main(cli, ["run", ""])
    captured = capsys.readouterr()
    assert exited.value.code == 0
    assert captured.out == f":{DIRECTIVE_ERROR}\n"
    assert "boom" not in captured.err


# --- the scripts -----------------------------------------------------------------------------


@pytest.mark.parametrize("shell", completion.SHELLS)
def test_every_script_completes_the_executable_through_the_helper(shell: str) -> None:
    script = completion.completion_script(shell)
    assert "kubectl-squarepeg" in script and completion.HELPER in script
    assert "kubectl completion" in script  # says where `kubectl squarepeg <TAB>` comes from


def test_an_unknown_shell_is_refused() -> None:
    with pytest.raises(ValueError, match="powershell"):
        completion.completion_script("powershell")


def test_the_missing_helper_note_says_what_to_link(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    note = completion.helper_missing_note()
    assert note is not None and "ln -s kubectl-squarepeg" in note
