"""What a check prints in a grading process: never kept and bounded. ``sys.stdout`` and ``sys.stderr`` are
replaced by :class:`Output` streams (:func:`bounded_output`) that discard what is written (the first characters of
stderr go through to the run's stderr file), and a check that prints more than :data:`OUTPUT_LIMIT` characters
gets :class:`OutputLimit` from ``print`` (:class:`OutputCounter` counts per check).
"""

from __future__ import annotations

import io
import sys

import pytest

OUTPUT_LIMIT = 1 << 30  # characters a check may print (stdout and stderr together) before print raises


class OutputLimit(Exception):
    """What ``print`` raises in a check that printed more than :data:`OUTPUT_LIMIT` characters."""


class Output(io.TextIOBase):
    """``sys.stdout`` and ``sys.stderr`` of a grading process (pytest's capture is off: ``--capture=no``). Nothing
    printed is kept: pytest's own capture kept a check's output in a file inside the student's disk quota (a correct
    submission printing 300 MB in one check lost it: "disk quota") and then read all of it into memory. stdout is
    discarded (the process's own is ``/dev/null``); the first ``keep`` characters of stderr still reach the run's
    stderr file (the grader's diagnostics), the rest is dropped. A check that prints more than :data:`OUTPUT_LIMIT`
    characters gets :class:`OutputLimit` from ``print``: its function fails saying so, no other."""

    def __init__(self, counter: OutputCounter, through=None, keep: int = 0, fileno: int = 1) -> None:
        self.counter = counter
        self.through = through
        self.keep = keep
        self._fileno = fileno

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fileno

    @property
    def encoding(self) -> str:  # type: ignore[override]  # a plain attribute of TextIOBase's streams
        return "utf-8"

    @property
    def buffer(self) -> OutputBytes:
        """The binary side (``sys.stdout.buffer.write(b"...")``), counted and discarded alike."""
        return OutputBytes(self)

    def write(self, text) -> int:
        size = len(text)
        self.counter.printed += size
        if self.counter.printed > OUTPUT_LIMIT and self.counter.active:
            self.counter.printed = OUTPUT_LIMIT + 1
            raise OutputLimit(
                f"your code printed more than {OUTPUT_LIMIT >> 20} MB of text during one check; the grader discards "
                "what a check prints: print less (or nothing) while grading"
            )
        if self.keep > 0 and self.through is not None:
            part = str(text)[: self.keep]
            self.keep -= len(part)
            try:
                self.through.write(part)
                self.through.flush()
            except (OSError, ValueError):
                self.keep = 0
        return size

    def flush(self) -> None:
        pass


class OutputBytes(io.RawIOBase):
    """:attr:`Output.buffer`: bytes written are :class:`Output`'s text."""

    def __init__(self, text: Output) -> None:
        self.text = text

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        size = len(memoryview(data).cast("B"))
        self.text.write(bytes(data).decode("utf-8", "replace"))
        return size


class OutputCounter:
    """What the current check printed (:class:`Output`); a plugin: reset as each check starts, and the limit in
    force only while the check's setup (the student's import), call and teardown run (never while pytest reports)."""

    def __init__(self) -> None:
        self.printed = 0
        self.active = False

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        self.printed = 0

    def _phase(self):
        self.active = True
        try:
            return (yield)
        finally:
            self.active = False

    pytest_runtest_setup = pytest.hookimpl(wrapper=True)(_phase)
    pytest_runtest_call = pytest.hookimpl(wrapper=True)(_phase)
    pytest_runtest_teardown = pytest.hookimpl(wrapper=True)(_phase)


def bounded_output() -> OutputCounter:
    """``sys.stdout`` and ``sys.stderr`` replaced by :class:`Output` streams; the counter to register with pytest."""
    counter = OutputCounter()
    sys.stdout = Output(counter, fileno=1)
    sys.stderr = Output(counter, sys.__stderr__, keep=STDERR_KEPT, fileno=2)
    return counter


STDERR_KEPT = 1 << 20  # characters of stderr written through to the run's stderr file
