"""The course's domain model, importing neither JAX nor pytest (the process plumbing is :mod:`autograder.runtime`):

- :mod:`~autograder.core.course`       ``course.toml``: modules, functions, points, hints
- :mod:`~autograder.core.status`       :class:`Status`, the one vocabulary of verdicts
- :mod:`~autograder.core.outcomes`     check id, check outcome, function score, student result; scoring
- :mod:`~autograder.core.attribution`  which function a check judges (``test_<function>_...``)
- :mod:`~autograder.core.failures`     :class:`CheckFailure`, "not started"
- :mod:`~autograder.core.submission`   loading a student's module, telling a stub from an attempt
- :mod:`~autograder.core.oracle`       the reference seam and the process's reference cache
- :mod:`~autograder.core.progress`     the student's local progress (``.autograder/progress.json``)
- :mod:`~autograder.core.hints`        the hints it paces
- :mod:`~autograder.core.versions`     the library versions this kit was tested with, and the installed ones
- :mod:`~autograder.core.syntax`       parsing and compiling syntax trees, one thread at a time (a CPython 3.11 race)
- :mod:`~autograder.core.from_source`  checks decided from a submission's source: the analyses by name
- :mod:`~autograder.core.state_writes` the analysis "module_state": what a call can write that outlives it
  (its walk of one function: :mod:`~autograder.core.state_walk`, :mod:`~autograder.core.state_function`)
"""
