"""Shell completion: the `kubectl_complete-squarepeg` helper and the `completion` scripts.

Owns how a <TAB> is answered, and nothing else: candidates come from the click command tree
in cli/app.py, so a subcommand, a flag or a `click.Choice` added there completes with no change
here. The one candidate list that comes from the cluster is the user's run names
(`run_name_items`, for `logs`, `wait`, `rm`, `exec` and `stop`): one `kubectl get
pods,jobs` of the user's runs, bounded by RUN_NAMES_SECONDS. Imported only by the
`completion` command and the helper, never by `run`, `--help` or `--version`.

How a <TAB> reaches this module:

- `kubectl squarepeg ...<TAB>`: kubectl's own completion (`kubectl completion SHELL`,
  kubectl 1.26 or newer) sees a plugin and runs the executable `kubectl_complete-squarepeg`
  found on PATH, with the words typed after `squarepeg`; the last word is the one being
  completed, empty for a new word. It reads one candidate a line, `VALUE` or
  `VALUE<TAB>HELP`, and an optional last line `:N`, a cobra ShellCompDirective (a bit
  set: 4 = do not fall back to file names). `complete_main` answers exactly that.
- `kubectl-squarepeg ...<TAB>`, the executable called by its own name: the script that
  `kubectl squarepeg completion bash|zsh|fish` prints asks the same helper the same way.
  click's stock scripts are not used: they have the program answer through an environment
  variable named after its program name, and this program calls itself
  `kubectl squarepeg`, a name with a space that no shell can turn into a variable.

A command that stops reading options at its first argument (`run`: everything after IMAGE
is the container's command, cli.md) gets no candidates once that argument is typed: a flag
offered there would silently become an argument of the container.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import click
from click.shell_completion import CompletionItem, ShellComplete

HELPER = "kubectl_complete-squarepeg"
"""The executable kubectl looks for on PATH to complete the plugin `squarepeg`."""

DIRECT_PROGRAM = "kubectl-squarepeg"
"""The plugin's own executable, which the printed scripts complete."""

# cobra's ShellCompDirective bits, the only ones this module sends.
DIRECTIVE_DEFAULT = 0  # nothing special: the shell may fall back to file names
DIRECTIVE_ERROR = 1  # completion failed: the shell offers nothing
DIRECTIVE_NO_SPACE = 2  # no space after the candidate (`cp`'s `NAME:`, a path follows)
DIRECTIVE_NO_FILE_COMP = 4  # no file names when there is no candidate
DIRECTIVE_FILTER_DIRS = 16  # offer directory names only

# A metavar that names a local file. Not DIR or PATH: here those are paths inside the
# container (--workdir, --tmpfs), where the local file names would be wrong.
_LOCAL_FILE_METAVARS = frozenset({"FILE"})
# A metavar listing the only legal values, as `--pull always|missing|never` does.
_CHOICES_METAVAR = re.compile(r"[a-z0-9-]+(\|[a-z0-9-]+)+")


@dataclass(frozen=True)
class Candidate:
    """One completion: the word to insert, and a help line shells may show beside it."""

    value: str
    help: str = ""


@dataclass(frozen=True)
class Completions:
    """What a <TAB> gets: the candidates and the cobra directive for the shell."""

    candidates: tuple[Candidate, ...]
    directive: int


@dataclass(frozen=True)
class _Position:
    """Where the cursor is in the command tree, from the complete words before it."""

    command: click.Command
    pending_option: click.Option | None  # an option whose value is being typed
    past_arguments: bool  # a command that stops at its first argument has it already


def complete_words(cli: click.Command, words: Sequence[str]) -> Completions:
    """Completions for `kubectl squarepeg WORDS...`, the last word being the one typed.

    `words` is what kubectl hands the helper: the words after the plugin's name, the last
    one possibly empty (a new word). No words at all is treated as one empty word.
    """
    args, incomplete = (list(words[:-1]), words[-1]) if words else ([], "")
    position = _locate(cli, args)
    if position.past_arguments:
        return Completions((), DIRECTIVE_NO_FILE_COMP)
    items = ShellComplete(cli, {}, DIRECT_PROGRAM, "").get_completions(args, incomplete)
    kinds = {item.type for item in items}
    if "dir" in kinds:
        return Completions((), DIRECTIVE_FILTER_DIRS)
    if "file" in kinds:
        return Completions((), DIRECTIVE_DEFAULT)
    candidates = tuple(_candidate(item) for item in items if item.type == "plain")
    if candidates:
        glued = all(c.value.endswith(":") for c in candidates)  # cp's NAME:, a path follows
        return Completions(candidates,
                           DIRECTIVE_NO_FILE_COMP | (DIRECTIVE_NO_SPACE if glued else 0))
    # click offers values only for a click.Choice; options here spell their legal values
    # in the metavar instead (`--mode pod|job`), and name local files with FILE.
    option, value_prefix = _value_being_typed(position, incomplete)
    if option is None:
        return Completions((), DIRECTIVE_NO_FILE_COMP)
    if (option.metavar or "").upper() in _LOCAL_FILE_METAVARS or isinstance(
        option.type, (click.Path, click.File)
    ):
        return Completions((), DIRECTIVE_DEFAULT)
    choices = _metavar_choices(option)
    return Completions(
        tuple(Candidate(choice) for choice in choices if choice.startswith(value_prefix)),
        DIRECTIVE_NO_FILE_COMP,
    )


# A <TAB> that asks the cluster for run names waits this long at most, then offers nothing.
RUN_NAMES_SECONDS = 5.0


def run_name_items(
    ctx: click.Context, incomplete: str, connect: Callable[[], tuple[Any, str]]
) -> list[CompletionItem[str]]:
    """The user's run names that start with `incomplete`, for `logs`, `wait`, `rm`, `exec`
    and `stop` (the commands' NAME arguments call this through click's `shell_complete`);
    none when the cluster cannot be asked (a <TAB> never prints an error)."""
    try:
        from kubectl_squarepeg.run.detached import run_names

        connection, created_by = connect()
        names = run_names(connection, created_by, timeout=RUN_NAMES_SECONDS)
    except Exception:
        return []
    return [CompletionItem(name) for name in names if name.startswith(incomplete)]


def render_for_kubectl(completions: Completions) -> str:
    """The helper's stdout: `VALUE[<TAB>HELP]` lines, then the `:N` directive line."""
    lines = [f"{c.value}\t{c.help}" if c.help else c.value for c in completions.candidates]
    lines.append(f":{completions.directive}")
    return "\n".join(lines) + "\n"


def complete_main(cli: click.Command, argv: Sequence[str] | None = None) -> NoReturn:
    """Body of `kubectl_complete-squarepeg` (cli.complete_main, which hands over its click
    command): answer one <TAB> about `cli` and exit 0."""
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        answer = render_for_kubectl(complete_words(cli, words))
    except Exception:
        # Whatever went wrong, a traceback must not land in the user's prompt: tell the
        # shell there is nothing to offer instead.
        answer = f":{DIRECTIVE_ERROR}\n"
    sys.stdout.write(answer)
    sys.stdout.flush()
    raise SystemExit(0)


def print_script(shell: str) -> None:
    """Body of `kubectl squarepeg completion SHELL`: the script on stdout, and a warning on
    stderr when the helper it relies on is missing from PATH."""
    from kubectl_squarepeg.terminal.console import Console

    sys.stdout.write(completion_script(shell))
    sys.stdout.flush()
    note = helper_missing_note()
    if note is not None:
        Console().warn(note)


def completion_script(shell: str) -> str:
    """The completion script for `kubectl-squarepeg` in SHELL (one of SHELLS)."""
    try:
        return _SCRIPTS[shell]
    except KeyError:
        raise ValueError(f"no completion script for {shell!r}; one of {SHELLS}") from None


def helper_missing_note() -> str | None:
    """A one-line note when the helper is not on PATH, saying what to link; else None."""
    import shutil

    if shutil.which(HELPER) is not None:
        return None
    return (
        f"{HELPER} is not on PATH, so `kubectl squarepeg <TAB>` and this script cannot "
        f"complete; link it next to the plugin: "
        f'ln -s {DIRECT_PROGRAM} "$(dirname "$(command -v {DIRECT_PROGRAM})")/{HELPER}"'
    )


def _candidate(item: CompletionItem[str]) -> Candidate:
    # A help text is one line in every shell's listing; tabs would split the value.
    help_text = " ".join((item.help or "").split())
    return Candidate(str(item.value), help_text)


def _value_being_typed(position: _Position, incomplete: str) -> tuple[click.Option | None, str]:
    """The option whose value is being typed, and the part of the value typed so far.

    For `--mode=p<TAB>` that is `p`, and candidates are bare values (`pod`), as cobra
    answers: the shell scripts put the `--mode=` back where their shell needs it.
    """
    if position.pending_option is not None:
        return position.pending_option, incomplete
    name, equals, value = incomplete.partition("=")
    if equals and name.startswith("--"):
        option = _options_by_name(position.command).get(name)
        if option is not None and not option.is_flag and not option.count:
            return option, value
    return None, ""


def _metavar_choices(option: click.Option) -> list[str]:
    if isinstance(option.type, click.Choice):
        return [str(choice) for choice in option.type.choices]
    metavar = option.metavar or ""
    return metavar.split("|") if _CHOICES_METAVAR.fullmatch(metavar) else []


def _options_by_name(command: click.Command) -> dict[str, click.Option]:
    return {
        name: param
        for param in command.params
        if isinstance(param, click.Option)
        for name in (*param.opts, *param.secondary_opts)
    }


def _locate(cli: click.Command, args: Sequence[str]) -> _Position:
    """Walk the complete words down the command tree, the way click would parse them."""
    command = cli
    index = 0
    # Down through groups: the first word that names a subcommand selects it. Groups here
    # take no option with a value (only --help and --version), so other words are skipped.
    while isinstance(command, click.Group) and index < len(args):
        subcommand = command.commands.get(args[index])
        index += 1
        if subcommand is not None:
            command = subcommand
    options = _options_by_name(command)
    stops_at_first_argument = command.context_settings.get("allow_interspersed_args") is False
    pending: click.Option | None = None
    options_ended = False
    for word in args[index:]:
        if pending is not None:
            pending = None  # this word was the pending option's value
            continue
        if options_ended or not word.startswith("-") or word == "-":
            if stops_at_first_argument:
                return _Position(command, None, past_arguments=True)
            continue
        if word == "--":
            options_ended = True
            continue
        pending = _option_awaiting_value(options, word)
    return _Position(command, pending, past_arguments=False)


def _option_awaiting_value(options: dict[str, click.Option], word: str) -> click.Option | None:
    """The option WORD leaves waiting for its value in the next word, if any.

    `--name=x` and `-nx` carry their value; a flag, a counter, or an option this command
    does not know wait for nothing.
    """
    if "=" in word and word.startswith("--"):
        return None
    option = options.get(word)
    if option is None or option.is_flag or option.count:
        return None
    return option


_BASH_SCRIPT = r"""# bash completion for kubectl-squarepeg (`kubectl squarepeg completion bash`).
#
# `kubectl squarepeg <TAB>` is completed by kubectl's own completion, kubectl 1.26 or
# newer (`source <(kubectl completion bash)`), which asks kubectl_complete-squarepeg on
# PATH. This script completes the executable called by its own name,
# `kubectl-squarepeg <TAB>`, by asking the same helper.
_kubectl_squarepeg_complete() {
    local -a words lines
    local line directive=0
    # The line up to the cursor, split on blanks only, so `--mode=po` stays one word.
    read -r -a words <<< "${COMP_LINE:0:COMP_POINT}"
    if [[ ${COMP_LINE:0:COMP_POINT} == *[[:blank:]] ]]; then
        words+=("")
    fi
    mapfile -t lines < <(kubectl_complete-squarepeg "${words[@]:1}" 2>/dev/null)
    COMPREPLY=()
    for line in "${lines[@]}"; do
        case $line in
            :[0-9]*) directive=${line#:} ;;
            ?*) COMPREPLY+=("${line%%$'\t'*}") ;;
        esac
    done
    if (( ${#COMPREPLY[@]} == 0 && (directive & 4) == 0 )); then
        compopt -o default 2>/dev/null  # nothing to offer: let bash complete file names
    fi
    return 0
}
complete -F _kubectl_squarepeg_complete kubectl-squarepeg
"""

_ZSH_SCRIPT = r"""#compdef kubectl-squarepeg
# zsh completion for kubectl-squarepeg (`kubectl squarepeg completion zsh`).
#
# `kubectl squarepeg <TAB>` is completed by kubectl's own completion, kubectl 1.26 or
# newer (`source <(kubectl completion zsh)`), which asks kubectl_complete-squarepeg on
# PATH. This script completes the executable called by its own name,
# `kubectl-squarepeg <TAB>`, by asking the same helper.
_kubectl_squarepeg() {
    local -a lines described
    local line value description directive=0
    lines=("${(@f)$(kubectl_complete-squarepeg "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    for line in "${lines[@]}"; do
        if [[ $line == :<-> ]]; then
            directive=${line#:}
        elif [[ -n $line ]]; then
            value=${line%%$'\t'*}
            description=""
            [[ $line == *$'\t'* ]] && description=${line#*$'\t'}
            described+=("${value//:/\\:}${description:+:$description}")
        fi
    done
    if (( ${#described} )); then
        compset -P '-*='  # `--mode=p`: the candidates replace what follows the `=`
        _describe -t values 'kubectl squarepeg' described
    elif (( (directive & 4) == 0 )); then
        _files
    fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _kubectl_squarepeg "$@"
else
    compdef _kubectl_squarepeg kubectl-squarepeg
fi
"""

_FISH_SCRIPT = r"""# fish completion for kubectl-squarepeg (`kubectl squarepeg completion fish`).
#
# `kubectl squarepeg <TAB>` is completed by kubectl's own completion, kubectl 1.26 or
# newer (`kubectl completion fish | source`), which asks kubectl_complete-squarepeg on
# PATH. This script completes the executable called by its own name,
# `kubectl-squarepeg <TAB>`, by asking the same helper.
function __kubectl_squarepeg_complete
    set -l words (commandline -opc)
    set -e words[1]
    set -l current (commandline -ct)
    # `--mode=p`: the helper answers bare values, fish wants the whole word back.
    set -l flag_prefix (string match -r -- '^-[^=]*=' $current)
    set -l directive 0
    set -l offered 0
    for line in (kubectl_complete-squarepeg $words $current 2>/dev/null)
        if string match -qr '^:[0-9]+$' -- $line
            set directive (string sub -s 2 -- $line)
        else if test -n "$line"
            echo "$flag_prefix$line"
            set offered 1
        end
    end
    if test $offered -eq 0; and test (math "bitand($directive, 4)") -eq 0
        __fish_complete_path (commandline -ct)
    end
end
complete -c kubectl-squarepeg -f -a '(__kubectl_squarepeg_complete)'
"""

_SCRIPTS = {"bash": _BASH_SCRIPT, "zsh": _ZSH_SCRIPT, "fish": _FISH_SCRIPT}

SHELLS = tuple(_SCRIPTS)
"""The shells `kubectl squarepeg completion` prints a script for."""
