"""The hypothesis profiles: ``student`` (quick) and ``grading``, both deterministic; ``use_seed`` for ``grade --seed``;
``without_shrinking`` for the trusted verifier."""

from __future__ import annotations

import os
from typing import Any

STUDENT, GRADING = "student", "grading"


def ignore_local_constants() -> None:
    """Generated inputs must not depend on which of the user's modules happen to be imported.

    Hypothesis mixes literals harvested from every imported local module (the
    student's files, the checks) into what it draws. Then the same check draws
    other inputs depending on what else was loaded: a student's literals would
    steer their own test inputs, and the grader's trusted side could not
    regenerate the inputs a student's process saw. (Hypothesis has no setting
    for this; the internal hook is pinned with hypothesis in pyproject.toml.)
    """
    from hypothesis.internal.conjecture import providers

    empty = providers._local_constants
    providers._get_local_constants = lambda: empty


def register_profiles() -> None:
    from hypothesis import HealthCheck, Phase, settings

    ignore_local_constants()

    # No explain phase: it re-runs a failing check hundreds of times, which
    # costs seconds per JAX check and tells a student little.
    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink]
    # filter_too_much: a release's recorded oracle leaves unrecorded inputs unjudged (rejected).
    quiet = [
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ]
    common: dict[str, Any] = dict(deadline=None, phases=phases, report_multiple_bugs=False, suppress_health_check=quiet)
    # Both profiles are derandomized (their inputs are fixed by the check's code): a student
    # release answers from outputs recorded for exactly these inputs.
    fixed: dict[str, Any] = dict(derandomize=True, database=None, print_blob=False)
    settings.register_profile(STUDENT, max_examples=15, **fixed, **common)
    settings.register_profile(GRADING, max_examples=30, **fixed, **common)


def use_seed(seed: int) -> None:
    """The grading profile, drawing its inputs from ``seed`` instead of from each check's code.

    Inputs stay deterministic for one seed (no database, a forced seed), but
    differ from the published ones a student release recorded answers for:
    no explicit ``@example`` (the public check file spells them; they teach,
    and run without a seed) and no reuse phase; the simplest inputs Hypothesis
    always tries first are moved by the seed in :mod:`autograder.checks.strategies`
    (which reads :func:`instructor_seed` when a check file is imported).
    """
    from hypothesis import Phase, core, settings

    from autograder.checks import scenario

    grading = settings.get_profile(GRADING)
    drawn = [p for p in grading.phases if p not in (Phase.explicit, Phase.reuse)]
    settings.register_profile("grading-seeded", grading, derandomize=False, database=None, phases=drawn)
    settings.load_profile("grading-seeded")
    core.global_force_seed = seed  # type: ignore[assignment]  # declared as None: hypothesis's own switch
    scenario.use_instructor_seed(seed)


def choose(explicit: str | None, grading_flag: bool) -> str:
    """The profile of a run: ``--hypothesis-profile``, else grading with ``--grading`` or ``CI``, else student."""
    if explicit:
        return explicit
    return GRADING if grading_flag or os.environ.get("CI") else STUDENT


def without_shrinking() -> None:
    """The loaded profile without its shrink phase (the trusted verifier: see its ``pytest_sessionstart``).

    Shrinking tries inputs the student's process never saw, so they have no
    recorded answer. Generation itself is unchanged: the same inputs are drawn
    in the same order, up to the first failing one.
    """
    from hypothesis import Phase, settings

    current = settings.default
    assert current is not None  # hypothesis loads its default profile when imported
    settings.register_profile("verifying", current, phases=[p for p in current.phases if p != Phase.shrink])
    settings.load_profile("verifying")
