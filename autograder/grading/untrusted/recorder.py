"""The student's functions, recording what they answer: each concrete call a check makes of a wrapped function
(:func:`recording`) is written into the reporter's transcript under the digest of its arguments
(:func:`call_key`, :func:`record_call`), for the trusted verifier to replay; the transcript is capped at
:data:`MAX_TRANSCRIPT_CHARS`. ``reporter`` is the grading process's
:class:`~autograder.grading.untrusted.child.ChildReporter` (its ``statics`` and ``size``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

MAX_TRANSCRIPT_CHARS = 20_000_000


def recording(reporter, calls: dict, label: str, original, answers: dict | None = None):
    """``original`` (the student's function, or its jitted form), writing each concrete call into ``calls``
    under ``label``. Checks that jit the function (``structure.jit_once``) get a recorded jitted
    function (``label|jit[...]``), so what they compare is recorded with concrete arguments, not tracers.
    With ``answers`` (a module judged on the trusted side only), a second call with the same arguments
    gives the first call's answer: the check compares the function with itself, and a function that
    answers differently each time is the purity checks' finding, not a difference from "the reference"."""

    @functools.wraps(original)
    def recorded(*args, **kwargs):
        key = call_key(reporter, label, args, kwargs)  # the arguments as given (the function may change them)
        if answers is not None and key is not None and key in answers:
            return answers[key]
        out = original(*args, **kwargs)
        record_call(reporter, calls, key, args, kwargs, out)
        if answers is not None and key is not None:
            answers[key] = out
        return out

    def jit_stand_in(static_argnums: tuple):
        from autograder.checks.structure import jit_once  # one jax.jit per function, as for any check

        jitted = jit_once(original, static_argnums)
        return recording(reporter, calls, f"{label}|jit{list(static_argnums)}", jitted, answers)

    def transform_stand_in(transform_label: str, transform: Callable):
        from autograder.checks.structure import transformed_once  # one transform per function, as for any check

        transformed = transformed_once(original, transform_label, transform)
        return recording(reporter, calls, f"{label}|{transform_label}", transformed, answers)

    recorded.jit_stand_in = jit_stand_in  # type: ignore[attr-defined]  # read by structure.jit_once
    recorded.transform_stand_in = transform_stand_in  # type: ignore[attr-defined]
    # with ``answers``, every check of what it answers is the trusted side's to decide (oracle.decided_elsewhere)
    recorded.decided_elsewhere = answers is not None  # type: ignore[attr-defined]
    return recorded


def call_key(reporter, name: str, args: tuple, kwargs: dict) -> str | None:
    """The digest the verifier will look ``name(*args, **kwargs)`` up by; None when it cannot be made."""
    from autograder.grading import transcript

    try:
        if reporter.statics is None:
            reporter.statics = transcript.statics()
        return transcript.digest(name, args, kwargs, reporter.statics)
    except Exception:  # noqa: BLE001 - a call that cannot be keyed is simply not recorded
        return None


def record_call(reporter, calls: dict, key: str | None, args: tuple, kwargs: dict, out) -> None:
    from autograder.grading import transcript
    from autograder.recording.plain_data import float_hints

    try:
        if key is None or key in calls or reporter.size > MAX_TRANSCRIPT_CHARS:
            return
        assert reporter.statics is not None  # made by call_key, which made the key
        encoded = transcript.encode(out, reporter.statics, float_hints([*args, *kwargs.values()]))
        reporter.size += len(json.dumps(encoded))
        calls[key] = encoded
    except Exception:  # noqa: BLE001 - a result that cannot be recorded is simply not confirmed
        return
