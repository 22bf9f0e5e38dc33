"""The replay stand-ins: a student's function answering, on the trusted side, from what the student's process
recorded of it (outputs keyed by the digest of the arguments). :func:`replayed` stands for the function a check
judges (and for its jit or transformed form), :func:`other_function` for another function of the module that the
check calls; :class:`ReplayState` notes what could not be replayed or had no recorded answer, and
:class:`Unverifiable` is raised where a check's inputs or results are not plain data.
"""

from __future__ import annotations

from collections.abc import Callable

from autograder.core.failures import CheckFailure


class Unverifiable(Exception):
    """The check touches something that cannot be replayed from plain data."""


class ReplayState:
    """What went wrong replaying one check: an input it could not replay, one with no recorded answer."""

    def __init__(self) -> None:
        self.unverifiable = False
        self.missing = False  # an input had no recorded answer
        self.other_missing = False  # the check called another function of the module with no recorded answer


def other_function(name: str, calls: dict, state: ReplayState, statics):
    """Another of the student's functions, called by a replayed check: it answers what the student's
    process recorded of it (a module judged on the trusted side only records them: ``fit`` is judged
    with the student's own ``sgd_update``). A call with no recorded answer raises :class:`Unverifiable`;
    if the check does not get past it, the check cannot be replayed."""
    from autograder.grading import transcript

    def other(*args, **kwargs):
        try:
            key = transcript.digest(name, args, kwargs, statics)
        except Exception:  # noqa: BLE001 - arguments that are not data: not replayed
            key = None
        if key is None or key not in calls:
            state.other_missing = True
            raise Unverifiable(name)
        try:
            out = transcript.decode(calls[key], statics)
        except ValueError:
            out = transcript.Opaque("malformed")
        if isinstance(out, transcript.Opaque):
            state.other_missing = True
            raise Unverifiable(name)
        return out

    other.__name__ = other.__qualname__ = name
    return other


def _recorded_answer(name: str, calls: dict, oracle, state: ReplayState, statics, label: str, form, args, kwargs):
    """What the student's ``name`` answered on ``args``/``kwargs`` as recorded under ``label`` (a replay's one call):
    the decoded result, or the failure or :class:`Unverifiable` that no usable record of it gives."""
    from autograder.grading import transcript

    key = transcript.digest(label, args, kwargs, statics)
    if key is None:
        state.unverifiable = True
        raise Unverifiable(name)
    if key not in calls:
        state.missing = True
        raise CheckFailure(
            f"{name} was called on the grader's inputs",
            f"the grader re-ran this check and your process reported no result of {name} for one of its inputs",
            "the check ran differently in your process than on the grader's side; "
            "make sure your module does not change the grader, NumPy or pytest",
        )
    try:
        out = transcript.decode(calls[key], statics)
    except ValueError:
        raise CheckFailure(f"{name} returned plain data", f"the result recorded for {name} was malformed") from None
    if isinstance(out, transcript.Opaque):
        reference = getattr(oracle, name)
        if form is not None:
            reference = form(reference)
        if transcript.is_opaque(transcript.encode(reference(*args, **kwargs), statics)):
            state.unverifiable = True  # neither result is plain data: the check compares objects
            raise Unverifiable(name)
    return out


def replayed(
    name: str,
    calls: dict,
    oracle,
    state: ReplayState,
    statics,
    label: str | None = None,
    form: Callable[[Callable], Callable] | None = None,
):
    """The student's ``name`` answering from ``calls`` (recorded under ``label``, by default ``name``).
    Checks that jit or transform it (``structure.jit_once``, ``structure.transformed_once``) get the replay
    of that form, which the student's process recorded under ``name|jit[...]`` or ``name|<label>`` with
    concrete arguments; ``form`` makes the reference's function the same form."""
    label = label or name

    def stand_in(*args, **kwargs):
        return _recorded_answer(name, calls, oracle, state, statics, label, form, args, kwargs)

    def jit_stand_in(static: tuple):
        from autograder.checks.structure import jit_once

        return replayed(name, calls, oracle, state, statics, f"{name}|jit{list(static)}", lambda f: jit_once(f, static))

    def transform_stand_in(transform_label: str, transform: Callable):
        from autograder.checks.structure import transformed_once

        return replayed(
            name,
            calls,
            oracle,
            state,
            statics,
            f"{name}|{transform_label}",
            lambda f: transformed_once(f, transform_label, transform),
        )

    stand_in.__name__ = name
    stand_in.__qualname__ = name
    stand_in.jit_stand_in = jit_stand_in  # type: ignore[attr-defined]  # read by structure.jit_once
    stand_in.transform_stand_in = transform_stand_in  # type: ignore[attr-defined]
    return stand_in
