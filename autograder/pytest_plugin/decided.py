"""Where a check's verdict is decided (issue 42): the trusted side or the student's own grading process.

- ``values``: the trusted side replays the check against the reference, with the student's function answering
  from what the grading process recorded of it (:mod:`autograder.grading.trusted.verifier`). Every
  ``@pytest.mark.correctness`` check is decided so; ``@pytest.mark.decided("values")`` marks a check of another
  property (same inputs, same outputs; inputs unchanged; randomness from the key ...) written so that only the
  recorded values decide it.
- ``program``: ``@pytest.mark.decided("program")``, the trusted side decides from the program the student's
  function traces to (sent as data, run on the trusted side's own inputs against the reference and inspected).
- ``observed``: anything else: witnessed in the student's process, tamper-evident (tripwires, the static screen,
  the audit hook), and withheld from a submission that needs review.

Only a ``decided`` check gates nothing: a function earns nothing while a *correctness* check fails.
"""

from __future__ import annotations

import pytest

VALUES = "values"
PROGRAM = "program"
OBSERVED = "observed"
MARK = "decided"
MARKER_HELP = (
    f'{MARK}(where): where the verdict is decided: "{VALUES}" (the trusted side, from recorded values) or '
    f'"{PROGRAM}" (the trusted side, from the program the function traces to)'
)


def decided_where(item: pytest.Item) -> str:
    """``values``, ``program`` or ``observed`` for ``item`` (see the module)."""
    if item.get_closest_marker("correctness") is not None:
        return VALUES
    mark = item.get_closest_marker(MARK)
    if mark is not None and mark.args and mark.args[0] in (VALUES, PROGRAM):
        return str(mark.args[0])
    return OBSERVED


def decided_on_the_trusted_side(item: pytest.Item) -> bool:
    """Whether the trusted side replays ``item``'s claimed pass (and the student's process records for it)."""
    return decided_where(item) != OBSERVED
