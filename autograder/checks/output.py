"""Output: what a function prints, including what JAX prints later from compiled code.

``jax.debug.print`` inside a jitted function does not print while the call
runs in Python: the compiled program hands the values to a host callback,
which writes to ``sys.stdout`` when the device gets there. So the output is
captured only after the result is ready and JAX's pending side effects have
run (``jax.effects_barrier()``).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator

import jax

from autograder.core.failures import CheckFailure

LIMIT_CHARS = 1 << 20  # what one block keeps of what it printed; a function that prints more fails the check


class _Bounded(io.StringIO):
    """A text buffer that keeps the first ``LIMIT_CHARS`` characters written and counts the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped = 0

    def write(self, s: str) -> int:
        room = max(LIMIT_CHARS - self.tell(), 0)
        if len(s) > room:
            self.dropped += len(s) - room
            super().write(s[:room])
        else:
            super().write(s)
        return len(s)  # all of it, as far as the caller knows


class Captured:
    """The text printed inside a :func:`captured_stdout` block (``.text``, ``.lines``), once the block ends."""

    def __init__(self) -> None:
        self.text = ""

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


@contextlib.contextmanager
def captured_stdout() -> Iterator[Captured]:
    """Capture ``sys.stdout`` inside the block, JAX's debug callbacks included.

    The block should end with the results it waits for ready
    (``jax.block_until_ready``); this waits for JAX's effects before it stops
    capturing, so nothing printed by the block arrives after it.
    """
    captured = Captured()
    buffer = _Bounded()
    jax.effects_barrier()  # what earlier code printed is not the block's
    try:
        with contextlib.redirect_stdout(buffer):
            try:
                yield captured
            finally:
                jax.effects_barrier()
    finally:
        captured.text = buffer.getvalue()
    if buffer.dropped:
        raise CheckFailure(
            "what the function prints",
            f"it printed more than {LIMIT_CHARS >> 20} MB within one check ({buffer.dropped} characters past it)",
            "print only what the docstring asks for (one line per call, for example): the output is kept and read",
        )
