"""cluster/execwords.py: kubectl exec's own words kept off the command's stderr, whatever
the chunking; the start failures recorded on localkube's real node become 127 and 126."""

from __future__ import annotations

import pytest

from kubectl_squarepeg.cluster.execwords import ExecStderr

NOT_FOUND = (
    b'error: Internal error occurred: Internal error occurred: error executing command in '
    b'container: failed to exec in container: failed to start exec "77f3a2": OCI runtime '
    b'exec failed: exec failed: unable to start container process: exec: "nope": '
    b"executable file not found in $PATH\n"
)
NOT_EXECUTABLE = NOT_FOUND.replace(b'"nope": executable file not found in $PATH',
                                   b'"/etc/passwd": permission denied')


def _through(stream: bytes, code: int, size: int) -> tuple[bytes, int, str | None]:
    words = ExecStderr()
    shown = b"".join(words.feed(stream[i:i + size]) for i in range(0, len(stream), size))
    ending = words.end(code)
    return shown + ending.rest, ending.code, ending.failure


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
def test_the_terminated_line_is_dropped_even_mid_line(size: int) -> None:
    assert _through(b"err\ncommand terminated with exit code 3\n", 3, size) == (b"err\n", 3, None)
    # Seen on the real node: glued to a last line the command did not end.
    assert _through(b"partialcommand terminated with exit code 1\n", 1, size) == (
        b"partial", 1, None)


@pytest.mark.parametrize("size", [1, 5, 1000])
def test_the_commands_own_lines_that_look_like_kubectls_pass(size: int) -> None:
    text = b"error: mine\ncommand terminated with exit code 9\nmore\n"
    assert _through(text, 0, size) == (text, 0, None)
    # Its own "error:" line, then kubectl's terminated line: only the latter goes.
    assert _through(b"error: mine\ncommand terminated with exit code 1\n", 1, size) == (
        b"error: mine\n", 1, None)
    # A terminated line with another code than kubectl's is the command's.
    text = b"command terminated with exit code 2\n"
    assert _through(text, 4, size) == (text, 4, None)


def test_bytes_pass_as_they_come_unless_they_may_be_kubectls() -> None:
    words = ExecStderr()
    assert words.feed(b"progress 10%\r") == b"progress 10%\r"
    assert words.feed(b"done\ncomm") == b"done\n"  # "comm" may begin kubectl's line
    assert words.feed(b"and not found\n") == b"command not found\n"  # it was not


def test_start_failures_are_127_and_126_with_the_commands_words() -> None:
    shown, code, failure = _through(NOT_FOUND, 1, 64)
    assert (shown, code) == (b"", 127)
    assert failure == "nope: executable file not found in $PATH"
    shown, code, failure = _through(NOT_EXECUTABLE, 1, 64)
    assert (shown, code, failure) == (b"", 126, "/etc/passwd: permission denied")


def test_another_kubectl_error_is_its_failure_with_its_code() -> None:
    text = b'error: unable to upgrade connection: container not found ("main")\n'
    shown, code, failure = _through(text, 1, 10)
    assert (shown, code) == (b"", 1)
    assert failure == 'unable to upgrade connection: container not found ("main")'
