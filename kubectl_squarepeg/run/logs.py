"""The log follower: the container's output, as raw bytes, to stdout, across dropped streams.

Owns the follow stream of one container's log (`verbs.log_request`: the request
`kubectl logs -f --timestamps` sends, made with `kubectl get --raw`) on a background thread,
and reconnecting when the stream drops, with exponential backoff, so that nothing is lost and
nothing is repeated. Never decodes container output and never writes anything of its own to
stdout: its messages go to stderr through the console.

What a stream's bytes mean is the decoder's (logdecoder.py, pure: timestamps off, the resume
point, the replay dropped, a rotation's gap found); this module drives kubectl (through
`kubectl.start`), writes what the decoder returns, and decides what to do when a stream ends.
A stream whose body is the kubelet's error (text without timestamps) counts as failed with it
as the reason.

Complete (docs/decisions/0120, 0200). A clean end of the stream proves nothing: the real
kubelet ends a follow cleanly at a log rotation, with the container still writing or not. So
once the container's end is known (`finish()`), every request is a plain read (no follow)
from the resume point, repeated until one brings nothing new; only that ends the follower.
Which kind a request is, is decided just before it starts: one sent after the end was known
reads a log that no longer changes, so a quick container's first request can be the proof.
The cheap check (logcheck.py: the log's last line compared with the last line written) is
made once, after a stream that brought output ended cleanly and the end is known.

Rotation. The kubelet renames a container's log file once it exceeds containerLogMaxSize
(10 MiB of CRI log by default, about 40 bytes a line more than the output), looking every
10 s, and serves only the current file. The decoder sees a resume meet a rotation
(logdecoder.py, "Rotation"), and the follower tells it whether the stream before was cut:
after a clean end within ROTATION_CHECK_SECONDS the rotation is the continuation (the
kubelet turns to the next file only at the end of the one it read); after a cut, or long
after, what the stream did not deliver of the rotated file is gone. The follower says where
on stderr (line and byte of the output) and sets `lost`, and the runner exits 125 unless
--keep. What was rotated before the first request cannot be seen missing through the API:
the runner asks the node's files (loghead.py), for which the follower tells it of the first
line. What containerd wrote in the instant between the kubelet's rename and its reopen is
not seen at all.
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Sequence
from typing import BinaryIO

from kubectl_squarepeg.cluster import kubectl, verbs
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.target import DEFAULT_NAMESPACE
from kubectl_squarepeg.errors import SquarepegError
from kubectl_squarepeg.run import logcheck, logstream
from kubectl_squarepeg.run.logdecoder import Gap, LogDecoder
from kubectl_squarepeg.run.logstream import Backoff, StartStream, Stream, retryable
from kubectl_squarepeg.terminal.console import Console

# A pipe holds 64 KiB; reading more at once lets a fast stream arrive in fewer, larger chunks.
READ_BYTES = 128 * 1024
# The kubelet looks at log sizes this often (containerLogMonitorInterval, default 10 s), so
# it rotates a container's log at most once in that time: a resume within it meets at most
# the one rotation that ended the stream before (see "Rotation").
ROTATION_CHECK_SECONDS = 10.0
# finish() looks at the output's progress this often while it waits.
_DRAIN_SLICE = 1.0


class LogFollower:
    """Follows one container's log on a background thread, writing its output to `out`.

    `start()` once the container is running or has ended; `finish(seconds)` once it has
    ended, to let the stream deliver the rest; `stop()` to stop at once (that is not a
    failure).

    When the reconnects are used up while the container runs (an API server down for longer
    than they last), the follower says so and waits: `finish()` tries again, with every
    attempt anew, once the container has ended (the API answers again by then: that is how
    the runner learned of the end), and fetches what is missing from the resume point. Once
    the container has ended, the reconnects are no longer counted: they go on (at the
    longest backoff) until `finish()`'s drain deadline, since every stream then replays up
    to the end and a few cuts inside the replay must not cost the output. When output is
    still incomplete at the deadline (or a retry cannot help) it says so on stderr, with the
    kubectl command that shows all of it, and sets `gave_up` and `error`. A stdout closed by
    its reader (`| head -1`) is not a failure of the stream: the follower stops without a
    word and sets `reader_gone`.
    """

    def __init__(
        self,
        target: kubectl.Target,
        pod: str,
        container: str,
        out: BinaryIO,
        console: Console,
        *,
        backoff: Backoff | None = None,
        start: StartStream | None = None,
        clock: Callable[[], float] = time.monotonic,
        logs_command: str | None = None,
        commands: Commands | None = None,
        on_first_line: Callable[[], None] | None = None,
    ) -> None:
        self._target, self._pod, self._container = target, pod, container
        # Called once, as the first line arrives (the runner's head check, loghead.py).
        self._on_first_line = on_first_line
        self._commands = commands or Commands(target)  # for a denial's `auth can-i`
        self._out = out
        self._console = console
        self._backoff = backoff or Backoff()
        self._start = start or self._start_kubectl
        self._clock = clock
        self._logs_command = logs_command or Commands(target).logs("Pod", pod, container)
        self.gave_up = False
        self.error: str | None = None
        self._pod_gone = False  # deleted by someone else: a stream that ends for good is no loss
        # What the output is missing, for the runner's exit code: a gap in the middle, or the
        # rest after the follower gave up; None while it is complete so far.
        self.lost: str | None = None
        self.reader_gone = False
        self._suspended: str | None = None  # why the reconnects were used up, until finish()
        self._silent_node: str | None = None  # the pod's node, while it does not answer
        self._last_failure: str | None = None  # the last drop's reason, for the deadline's word
        self._decoder = LogDecoder()
        # _lock guards the flags and the current stream; _write_lock keeps decoding and
        # writing in order, and is never held while waiting on anything else.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._write_lock = threading.Lock()
        self._stopped = False
        self._finished = False
        self._stream: Stream | None = None
        self._cut = False  # the last stream failed rather than ended (LogDecoder.restart)
        self._ended_at = clock()  # when the last stream ended
        self._written = 0
        self._progressed_at = clock()  # when output was last written (finish's deadline)
        # Time spent in writes to `out`, and when the one under way began: a slow reader's
        # pace, which finish's deadline does not count against the stream.
        self._blocked_seconds = 0.0
        self._writing_since: float | None = None
        self._tail = b""  # the end of what was written: its last line, for the cheap check
        self._check: logcheck.Check | None = None  # the cheap check, once the container has ended
        self._write_failure: Exception | None = None
        self._thread = threading.Thread(target=self._follow, name=f"logs-{pod}", daemon=True)

    # -- the runner's side

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop streaming now: end the kubectl child; the thread ends soon after."""
        with self._lock:
            self._stopped = True
            stream = self._stream
            check = self._check.child if self._check is not None else None
            self._changed.notify_all()
        for child in (stream, check):
            if child is not None:
                child.terminate()

    @property
    def first_timestamp(self) -> bytes:
        """The timestamp of the output's first line, b"" while none has come."""
        with self._write_lock:
            return self._decoder.first_timestamp

    def pod_is_gone(self) -> None:
        """The pod was deleted before its container ended (the run fails with that): what
        could not be read is gone with it, so giving up warns of nothing and names no
        `kubectl logs`, which could only answer NotFound."""
        with self._lock:
            self._pod_gone = True

    def node_silent(self, node: str | None) -> None:
        """The pod's node stopped answering (`node`), or answers again (None; run/nodeloss.py).
        While it is silent, reconnects used up are no news: the run's line about the node
        said why. Once it answers, a follower that used them up starts again now, so the
        output goes on live rather than at the container's end."""
        with self._lock:
            self._silent_node = node
        if node is None:
            self._resume_after_suspension()

    def finish(self, quiet_seconds: float, limit_seconds: float | None = None) -> bool:
        """The container has ended: wait for the stream to deliver the rest (reconnecting if
        it drops) for as long as it brings new output, giving up once nothing new has come
        for `quiet_seconds`, or `limit_seconds` after the end in any case. True when
        everything was written. Called before `start()`, the first request is already a
        final read (see "Complete").

        A deadline counted from the end alone failed big logs on a small node: its kubelet
        and API server serve about 35,000 lines a second between them (CPU-bound, about 20
        microseconds a line each), so a container that wrote 700,000 lines in a second had
        its output arrive 20 s and more after its end (decision 0425)."""
        with self._lock:
            self._finished = True
            self._changed.notify_all()
        if self._thread.ident is not None:
            ended, blocked_before = self._clock(), self._blocked_seconds
            limit = limit_seconds if limit_seconds is not None else float("inf")
            late = self._drain(ended, ended, blocked_before, quiet_seconds, limit)
            if late is None and self._resume_after_suspension():
                late = self._drain(ended, self._clock(), blocked_before, quiet_seconds, limit)
            if late is not None:
                if self._last_failure is not None:
                    late += f"; the last drop: {self._last_failure}"
                self._give_up(late)
                self.stop()
                self._thread.join(quiet_seconds)
        return not self.gave_up

    def _drain(self, ended: float, since: float, blocked_before: float, quiet: float,
               limit: float) -> str | None:
        """Wait for the thread while it brings new output; None once it has ended, else why
        the wait was cut short. Output written counts, not bytes received: a stream that
        only replays what was written is no progress. Time spent blocked on stdout since the
        end (`_blocked_seconds` beyond `blocked_before`) counts for neither limit: a slow
        reader (`| less`) sets the pace then, not the stream."""
        while True:
            now = self._clock()
            writing = self._writing_since
            blocked = self._blocked_seconds - blocked_before
            if writing is not None:
                blocked += now - max(writing, ended)
            silent_for = 0.0 if writing is not None else now - max(since, self._progressed_at)
            if silent_for >= quiet:
                return f"nothing new came for {quiet:g}s after the container's end"
            spent = now - ended - blocked
            if spent >= limit:
                return f"the stream did not end within {limit:g}s of the container's end"
            self._thread.join(min(quiet - silent_for, limit - spent, _DRAIN_SLICE))
            if not self._thread.is_alive():
                return None

    def _resume_after_suspension(self) -> bool:
        """A new round of reconnects for a follower that used its attempts up; False when
        there is nothing to resume."""
        with self._lock:
            if self._suspended is None or self._stopped or self.gave_up:
                return False
            self._suspended = None
            self._thread = threading.Thread(
                target=self._follow, name=f"logs-{self._pod}", daemon=True
            )
        self._thread.start()
        return True

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True once it has ended (or was never started)."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the thread

    def _start_kubectl(self, args: Sequence[str], on_stdout: Callable[[bytes], None]) -> Stream:
        # The namespace is in the request's path; `get --raw` takes no --namespace.
        return kubectl.start(
            args, self._target, on_stdout=on_stdout, out_bufsize=READ_BYTES, namespaced=False
        )

    def _follow(self) -> None:
        attempt = 0
        while True:
            began, written = self._clock(), self._written
            with self._lock:
                finished = self._finished
            if finished and self._check is None and not self._cut and self._written:
                # The stream before ended cleanly before the container's end was known: the
                # cheap check first, now (see "Complete" in the module docstring).
                self._start_check()
                if self._check_says_complete():
                    return
            # A rotation found by a resume long after a clean end may be a second one.
            quiet = self._clock() - self._ended_at
            connected = self._connect(after_cut=self._cut or quiet >= ROTATION_CHECK_SECONDS)
            if connected is None:
                return
            stream, final = connected
            code = self._wait(stream)
            with self._write_lock:
                if code == 0:
                    self._decoder.end()
                    gap = self._decoder.take_gap()
                    if gap is not None:
                        self._report_gap(gap)
                refusal = self._decoder.take_refusal()
            if refusal is not None and code == 0:
                code = _REFUSED  # the kubelet's error in the body: not an end
            if self._written > written:
                # Only a stream that brought output tells where the kubelet's reader of the
                # older file stopped: a refused or empty request does not change it.
                self._cut = code != 0
                self._ended_at = self._clock()
            with self._lock:
                self._stream = None
                if self._stopped:
                    return
                finished = self._finished
            if self._write_failure is not None:
                if _is_reader_gone(self._write_failure):
                    self.reader_gone = True  # `| head`: what the reader wanted, it got
                else:
                    self._give_up(f"cannot write to stdout ({self._write_failure})")
                return
            if code == 0 and final and self._written == written:
                return  # complete: the log holds nothing after what was written
            if code == 0 and finished:
                attempt = 0
                continue  # a clean end proves nothing: read what the log holds now
            if self._written > written or self._clock() - began >= self._backoff.stable_seconds:
                attempt = 0
            # A clean end before finish() is most likely the container's own end, seen
            # before the runner saw the pod's phase: wait for finish() instead of a retry.
            reason = None if code == 0 else refusal or logstream.reason(stream, code)
            if reason is not None and not retryable(reason):
                self._give_up(reason)
                return
            if reason is not None:
                self._last_failure = reason
            attempt += 1
            # Clean ends too: the runner may not have seen the container's end yet (its
            # watch reconnecting after an API server restart), and what is missing, if
            # anything, is fetched once it has. After the end, the deadline decides.
            if attempt > self._backoff.attempts and self._suspend(reason):
                return
            delay = self._backoff.delay(attempt)
            if reason is not None:
                self._console.status(
                    f"the log stream of pod {self._pod} dropped ({reason}); will retry in "
                    f"{delay:g}s ({self._attempt_words(attempt)})"
                )
            self._pause(delay, ended_cleanly=reason is None)

    def _attempt_words(self, attempt: int) -> str:
        if attempt <= self._backoff.attempts:
            return f"attempt {attempt} of {self._backoff.attempts}"
        return f"attempt {attempt}; the container has ended: until the drain deadline"

    def _connect(self, *, after_cut: bool) -> tuple[Stream, bool] | None:
        """Start the next log stream, resuming after what was written; None: stop. With it,
        whether it is final: started once the container's end was known, a plain read
        (no follow) of a log that no longer changes."""
        with self._write_lock:
            self._decoder.restart(after_cut=after_cut)
            since = self._decoder.resume.since_time()
        namespace = self._target.namespace or DEFAULT_NAMESPACE
        with self._lock:
            if self._stopped:
                return None
            # Decided here, under the lock and just before the start, rather than at the top
            # of the loop: a request that leaves after finish() reads a final log, and a
            # quick container's end is often known by the time its first request starts.
            final = self._finished
            request = verbs.log_request(
                namespace, self._pod, self._container, since, follow=not final
            )
            try:
                self._stream = self._start(["get", "--raw", request], self._deliver)
            except (SquarepegError, OSError) as exc:
                failure = exc.one_line() if isinstance(exc, SquarepegError) else str(exc)
            else:
                return self._stream, final
        self._give_up(failure)
        return None

    def _wait(self, stream: Stream) -> int:
        while True:
            code = stream.wait(0.25)
            if code is not None:
                return code
            if self._write_failure is not None:
                stream.terminate()

    def _pause(self, seconds: float, *, ended_cleanly: bool) -> None:
        """Wait before the next attempt; after a clean end, only until the container ends."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._stopped or (ended_cleanly and self._finished), seconds
            )

    def _deliver(self, chunk: bytes) -> None:
        """On the reader thread: decode a chunk and write the container's bytes at once."""
        with self._write_lock:
            if self._write_failure is None:
                data = self._decoder.feed(chunk)
                if self._on_first_line is not None and self._decoder.first_timestamp:
                    self._on_first_line()
                    self._on_first_line = None
                gap = self._decoder.take_gap()
                if gap is None:
                    self._write(data)
                    return
                cut = gap.bytes_before - (self._decoder.emitted - len(data))
                self._write(data[:cut])
                self._report_gap(gap)
                self._write(data[cut:])

    def _report_gap(self, gap: Gap) -> None:
        last = f"line {gap.lines_before}" + (" (in part)" if gap.partial else "")
        after = gap.after_timestamp.decode("ascii", "replace")
        upto = gap.next_timestamp.decode("ascii", "replace")
        span = f"between {after} and {upto}" if upto else f"after {after}"
        lost = (
            f"output lost after {last}, byte {gap.bytes_before}: the node's log of pod "
            f"{self._pod} no longer holds what the container wrote {span}"
        )
        if self.lost is None:  # not under _lock: _connect may hold it while this runs
            self.lost = lost
        self._console.events.emit(
            "gap", pod=self._pod, line=gap.lines_before, byte=gap.bytes_before,
            partial=gap.partial, after=after or None, before=upto or None,
        )
        self._console.warn(
            f"{lost} (the kubelet rotates a container's log file at containerLogMaxSize, "
            "10 MiB by default, and the rotated part was not read in time); "
            "the output after the gap follows"
        )

    def _write(self, data: bytes) -> None:
        if not data:
            return
        began = self._writing_since = self._clock()
        try:
            self._out.write(data)
            self._out.flush()
        except (OSError, ValueError) as exc:
            self._write_failure = exc
            return
        finally:
            # Progress first: finish() must never see the write over and the progress not
            # yet counted (after a long blocked write it would take the stream for silent).
            self._progressed_at = now = self._clock()
            self._blocked_seconds += now - began
            self._writing_since = None
        self._written += len(data)
        self._tail = logcheck.keep_tail(self._tail, data)

    def _start_check(self) -> None:
        """Start the cheap check (logcheck.py): one request for the log's last line, made
        only once the container's end is known, so that its answer is the log's final last
        line. Once per follower; `_check_says_complete` reads it."""
        check = logcheck.Check(self._clock())
        self._check = check
        request = logcheck.request(self._target, self._pod, self._container)
        with self._lock:
            if self._stopped:
                return
            try:
                check.child = self._start(request, check.answer.append)
            except (SquarepegError, OSError):
                return  # no answer: the plain read decides

    def _check_says_complete(self) -> bool:
        """Whether the check's answer is the last line written (logcheck.py); False when it
        cannot tell: then the plain read from the resume point decides."""
        check = self._check
        if check is None or self._cut:
            return False
        return check.says_complete(self._clock, self._expected_last_line)

    def _expected_last_line(self) -> bytes | None:
        with self._write_lock:
            return logcheck.expected_last_line(self._decoder.resume, self._tail, self._written)

    def _suspend(self, reason: str | None) -> bool:
        """Wait for the container's end before trying again (see the class docstring);
        False if it has ended already (the attempts were the last chance). A stream that
        only ended cleanly (`reason` None) lost nothing: it waits without a word."""
        with self._lock:
            if self._finished or self._stopped:
                return False
            self._suspended = reason or _KEPT_ENDING
            silent = self._silent_node is not None
        if reason is not None and not silent:
            self._console.warn(
                f"the log stream of pod {self._pod} dropped and {self._backoff.attempts} "
                f"reconnects failed ({reason}); the rest of the output will be fetched once "
                "the container has ended, before anything is deleted"
            )
        return True

    def _give_up(self, reason: str) -> None:
        with self._lock:
            if self.gave_up:
                return
            self.gave_up = True
            self.error = reason
            if self._pod_gone:
                return
            if self.lost is None:
                self.lost = (
                    f"the output may be incomplete after byte {self._written}: the log "
                    f"stream of pod {self._pod} was lost ({reason})"
                )
        self._console.events.emit(
            "output_lost", pod=self._pod, byte=self._written, reason=" ".join(reason.split())
        )
        self._console.warn(
            f"lost the log stream of pod {self._pod} ({reason}"
            f"{self._commands.permission_check(reason)}); its output may be "
            f"incomplete: see all of it with `{self._logs_command}`"
        )


_KEPT_ENDING = "the stream kept ending before the container did"
_REFUSED = -1  # the exit code the follower gives a stream that carried the kubelet's error


def _is_reader_gone(failure: Exception) -> bool:
    return isinstance(failure, BrokenPipeError) or getattr(failure, "errno", None) == errno.EPIPE

