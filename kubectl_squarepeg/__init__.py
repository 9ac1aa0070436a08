"""kubectl-squarepeg: run one container on a cluster and get its output and exit code back.

This package module owns the version string and, when it is the `kubectl-squarepeg`
executable starting, one more thing, first of all: a Ctrl-C or hang-up that arrives while
Python is still importing squarepeg is remembered (`early_signals`) instead of becoming a
KeyboardInterrupt traceback; `cli.main()` acts on it as soon as it can. A stop signal it was
started with ignored stays ignored for good (`stoppable`): `nohup` ignores SIGHUP, and a
script's `cmd &` ignores SIGINT, precisely so that they do not stop the command (Python
leaves an ignored SIGINT alone for the same reason). Imported by anything else (tests,
`python -m`), it does nothing. Everything else is imported lazily by the
command that needs it, so `--help` and `--version` stay fast.
"""

# The C modules, already loaded: nothing may stand between start-up and the handlers.
import _signal  # type: ignore[import-not-found]
import sys as _sys

__version__ = "0.1.0"

# Signals received before cli.main() took them over, in order of arrival.
early_signals: list[int] = []


# The stop signals whoever started squarepeg told it to ignore.
ignored_at_start: frozenset[int] = frozenset()


def stoppable(signals: tuple[int, ...]) -> tuple[int, ...]:
    """The signals of `signals` that squarepeg may handle: not those it started ignoring."""
    return tuple(signum for signum in signals if signum not in ignored_at_start)


def _remember(signum: int, frame: object) -> None:
    early_signals.append(signum)


if _sys.argv and _sys.argv[0].endswith("kubectl-squarepeg"):
    ignored_at_start = frozenset(
        signum
        for signum in (_signal.SIGINT, _signal.SIGHUP, _signal.SIGTERM)
        if _signal.getsignal(signum) == _signal.SIG_IGN
    )
    for _signum in stoppable((_signal.SIGINT, _signal.SIGHUP)):
        _signal.signal(_signum, _remember)
