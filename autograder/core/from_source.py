"""Checks decided from the source (issue 42): a verdict the trusted side reaches from the submission's text alone.

Some properties cannot be seen in a function's results (a write to module state that changes no result, a
retrace), so recorded values cannot decide them; what the student's process observes of them a hostile
submission can forge. A check marked ``@pytest.mark.decided("source", "<analysis>")``
(:mod:`autograder.pytest_plugin.decided`) is decided by a static *analysis* of the module's source, named in
:data:`ANALYSES`: a pure function of (source text, module name, function name) that never imports or runs the
code, so the trusted side runs it on the text the grader read (``core.submission.Submission``, sent in
``grading.wire.VerifierRequest.sources``) and the student's own run (``pytest exercises/``, a grading process)
runs the same one first, so an honest student reads the same message. A claimed pass stands only when the
trusted side's analysis passes; a failure the student's process observes still fails.

- :data:`ANALYSES`        name -> analysis (``None``: nothing found; else the :class:`CheckFailure` to report)
- :func:`decide_from_source` one analysis of one function, on a source that may be missing or not parse
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from autograder.core import retrace_sources
from autograder.core.failures import CheckFailure
from autograder.core.state_writes import module_state_failure

Analysis = Callable[[str, str, str], "CheckFailure | None"]

# The analyses a check may be decided by (the second argument of its ``decided("source", ...)`` mark, or of a
# ``decided("program", ...)`` one: the retracing checks, decided from the program and the source).
ANALYSES: Mapping[str, Analysis] = {
    "module_state": module_state_failure,  # calling it writes no state that outlives the call (core.state_writes)
    "retraces": retrace_sources.no_retrace_cause,
    "retraces_in_a_loop": retrace_sources.no_retrace_cause_in_a_loop,
    "jitted_without_retraces": retrace_sources.jitted_without_retrace_cause,
}


def decide_from_source(analysis: str, source: str | bytes | None, module: str, function: str) -> CheckFailure | None:
    """What ``analysis`` finds in ``function`` of ``<module>.py``, whose text is ``source`` (None: the grader has
    none); an unknown analysis or a missing source is a failure, never a pass."""
    check = f"{module}.{function} is decided from the source of {module}.py"
    found = ANALYSES.get(analysis)
    if found is None:
        return CheckFailure(check, f"the course names no source analysis {analysis!r}")
    if source is None:
        return CheckFailure(check, f"the grader has no source of {module}.py to decide this check from")
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    return found(text, module, function)
