"""``autograder grade``: a class of submissions, each in a limited process, every claimed pass
confirmed by a trusted verifier that never runs student code.

The one library entry is :func:`grade_class` (:mod:`.api`). The folders say which process runs the code:

- :mod:`.isolation`: the grader's process, holding students' processes inside limits (and the zygote)
- :mod:`.untrusted`: inside a grading process, next to the student's code
- :mod:`.trusted`: the trusted verifier's process, and the grader's client of it
- :mod:`.outputs`: the grader's process, writing what ``grade`` hands out
- :mod:`.desk`: the grader's process, the instructor's desk: late policy, roster, LMS files, gradebook
- here: the grader's process orchestrating a run (:mod:`.api`, :mod:`.command`, :mod:`.grader`, :mod:`.pool`,
  :mod:`.pipeline` with :mod:`.runs` and :mod:`.verdicts`, :mod:`.executor`, :mod:`.cluster`, :mod:`.preflight`,
  :mod:`.options`), and what both sides of a pipe share (:mod:`.wire`, :mod:`.transcript`)
"""

__all__ = ["ClassGrades", "grade_class"]


def __getattr__(name: str):
    """``grade_class`` and ``ClassGrades``, imported on first use: a grading process imports this package too
    (its ``untrusted`` and ``trusted`` modules), and must not import the orchestrator with it."""
    if name in __all__:
        from autograder.grading import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
