"""The inputs a recorded oracle has no answer for: such an input is *not judged* (:func:`not_recorded`: inside a
hypothesis test the example is rejected, elsewhere the check is skipped with :data:`NOT_RECORDED`), and the
process's list of them (:func:`misses`, cleared before each check), which the plugin reads to turn a check with
no judged example into a skip; :func:`call_text` writes a call's arguments for that reason.
"""

from __future__ import annotations

from autograder.runtime import stores

NOT_RECORDED = (
    "not judged: the course's recorded answers do not cover this input "
    "(the release recorded the inputs of the student and grading profiles only)"
)


class NotRecorded(Exception):
    """The recording has no answer for this call."""


def not_recorded(what: str) -> None:
    """Leave the current input unjudged (see the module docstring)."""
    from hypothesis import control, reject

    _MISSES.append(what)
    if control.currently_in_test_context():
        reject()
    import pytest

    pytest.skip(f"{NOT_RECORDED}: {what}")


_MISSES: list[str] = stores.register("recording.recorded.misses", [])  # one check's: the plugin clears it before each


def misses() -> list[str]:
    """Inputs left unjudged in this process (the plugin turns a check with no judged example into a skip)."""
    return _MISSES


def clear_misses() -> None:
    """Forget the inputs left unjudged so far (before each check: the list never holds more than one check's)."""
    _MISSES.clear()


def call_text(args: tuple, kwargs: dict, limit: int = 120) -> str:
    """The call's arguments in a line (for the reason a check was not judged)."""
    text = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    text = " ".join(text.split())
    return f"({text[:limit]}{'...' if len(text) > limit else ''})"
