"""The student README of a release (set up, run the checks, what the score means)."""

from __future__ import annotations

from autograder.core.course import Course
from autograder.core.outcomes import points_text


def student_readme(course: Course) -> str:
    modules = "\n".join(
        f"| {i} | `exercises/{m.name}.py` | {m.topic} | {points_text(sum(fn.points for fn in m.functions), None)} |"
        for i, m in enumerate(course.modules, 1)
    )
    return f"""# {course.title}

Each module is a file in `exercises/` with functions to fill in; its checks are
`exercises/test_<module>.py`.

## Set up (once)

    bash scripts/setup.sh          # creates .venv with the pinned JAX, Flax, Optax, PyTorch (CPU)
    source .venv/bin/activate

## Check your work

    pytest exercises/              # or one module: pytest exercises/test_prng.py

Works offline. Every check names what it tested; a failing one shows the input,
the expected value and yours, and a hint.

| # | file | topic | points |
|---|------|-------|--------|
{modules}

## What the score means

The table at the end of `pytest exercises/` is **practice feedback**: a function
earns `points × passed checks / checks` (partial credit), and nothing while one
of its correctness checks (its values against the reference) fails. Expected values come from `oracle/`, answers the
course recorded for the inputs these checks generate; a check that meets an
input that was not recorded (for example while hypothesis shrinks a failure)
does not judge it, and a check with no judged input is reported as skipped.

Your grade is computed by your instructor with `autograder grade`, on inputs
drawn from a seed you do not know and compared with the reference there. Write
the functions, not answers to these particular inputs.
"""
