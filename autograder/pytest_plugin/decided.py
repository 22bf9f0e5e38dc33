"""Where a check's verdict is decided (issue 42): the trusted side or the student's own grading process.

- ``values``: the trusted side replays the check against the reference, with the student's function answering
  from what the grading process recorded of it (:mod:`autograder.grading.trusted.verifier`). Every
  ``@pytest.mark.correctness`` check is decided so; ``@pytest.mark.decided("values")`` marks a check of another
  property (same inputs, same outputs; inputs unchanged; randomness from the key ...) written so that only the
  recorded values decide it.
- ``program``: ``@pytest.mark.decided("program")``, the trusted side decides from the program the student's
  function traces to (sent as data, run on the trusted side's own inputs against the reference and inspected).
- ``source``: ``@pytest.mark.decided("source", "<analysis>")``, the trusted side decides from the submission's
  source text with the named static analysis (:mod:`autograder.core.from_source`), without running the check;
  the student's process runs the same analysis before the check's body (:func:`failure_from_source`), so a
  student reads the same message, and the body still observes what the analysis does not see.
- ``program`` and ``source``: ``@pytest.mark.decided("program", "<analysis>")``, both: a claimed pass stands when
  the analysis of the source finds nothing (else it fails with its message, not replayed) and the replayed check,
  from the program, passes (the retracing checks: what was compiled from the program, how often Python traces it
  from the source, :mod:`autograder.core.retrace_sources`).
- ``observed``: anything else: witnessed in the student's process, tamper-evident (tripwires, the static screen,
  the audit hook), and withheld from a submission that needs review.

Only a ``decided`` check gates nothing: a function earns nothing while a *correctness* check fails.
"""

from __future__ import annotations

import pytest

from autograder.core.failures import CheckFailure
from autograder.core.from_source import ANALYSES, decide_from_source

VALUES = "values"
PROGRAM = "program"
SOURCE = "source"
OBSERVED = "observed"
MARK = "decided"
MARKER_HELP = (
    f'{MARK}(where, analysis=None): where the verdict is decided: "{VALUES}" (the trusted side, from recorded '
    f'values), "{PROGRAM}" (the trusted side, from the program the function traces to) or "{SOURCE}" (the trusted '
    "side, from the module's source, by the analysis named second: autograder.core.from_source.ANALYSES)"
)


def source_analysis(item: pytest.Item) -> str | None:
    """The analysis of a check marked ``decided("source", analysis)``, or ``decided("program", analysis)`` (decided
    from the program *and* the source: both must pass); None for any other check, or an analysis the course does not
    know (a ``source`` check is then observed, a ``program`` one decided from its program alone)."""
    mark = item.get_closest_marker(MARK)
    if mark is None or item.get_closest_marker("correctness") is not None:
        return None
    if len(mark.args) == 2 and mark.args[0] in (SOURCE, PROGRAM) and mark.args[1] in ANALYSES:
        return str(mark.args[1])
    return None


def decided_where(item: pytest.Item) -> str:
    """``values``, ``program``, ``source`` or ``observed`` for ``item`` (see the module)."""
    if item.get_closest_marker("correctness") is not None:
        return VALUES
    mark = item.get_closest_marker(MARK)
    if mark is not None and mark.args and mark.args[0] in (VALUES, PROGRAM):
        return str(mark.args[0])
    if source_analysis(item) is not None:
        return SOURCE
    return OBSERVED


def decided_on_the_trusted_side(item: pytest.Item) -> bool:
    """Whether the trusted side decides ``item``'s claimed pass."""
    return decided_where(item) != OBSERVED


def replayed_on_the_trusted_side(item: pytest.Item) -> bool:
    """Whether the trusted side replays ``item``'s claimed pass from what the student's process records for it."""
    return decided_where(item) in (VALUES, PROGRAM)


def failure_from_source(
    item: pytest.Item, source: str | bytes | None, module: str, function: str
) -> CheckFailure | None:
    """What the analysis of a source-decided ``item`` finds in ``function`` of ``<module>.py`` (``source``: its
    text); None for a check not decided from the source, or a function the analysis passes."""
    analysis = source_analysis(item)
    if analysis is None:
        return None
    return decide_from_source(analysis, source, module, function)
