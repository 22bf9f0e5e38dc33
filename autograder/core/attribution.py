"""Which function a check judges: explicit, by its name, never a guess.

A check of ``exercises/test_<module>.py`` belongs to the function ``F`` of
that module when its test name is ``test_F`` or starts with ``test_F_``.
A check that matches no function, or two (``test_train_step_bn_...`` when
the module has both ``train_step`` and ``train_step_bn``), is an error with
a hint saying how to rename it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from autograder.core.course import Course, Function


class AttributionError(ValueError):
    """A check's name does not name exactly one function; the message says how to fix it."""


def matches(test_name: str, function: str) -> bool:
    """Whether ``test_name`` names ``function`` by the rule above."""
    return test_name == f"test_{function}" or test_name.startswith(f"test_{function}_")


def candidates(test_name: str, functions: Iterable[Function]) -> list[Function]:
    return [fn for fn in functions if matches(test_name, fn.name)]


def attribute(test_name: str, module: str, course: Course) -> Function:
    """The one function of ``module`` that check ``test_name`` judges; raises :class:`AttributionError`."""
    functions = course.module(module).functions
    found = candidates(test_name, functions)
    if len(found) == 1:
        return found[0]
    names = [fn.name for fn in functions]
    if not found:
        raise AttributionError(
            f"check {test_name} of exercises/test_{module}.py names none of the functions of {module} {names}; "
            f"fix: rename it test_<function>_<what it checks>, e.g. test_{names[0]}_..."
        )
    longest = max(found, key=lambda fn: len(fn.name)).name
    raise AttributionError(
        f"check {test_name} of exercises/test_{module}.py could judge {' or '.join(fn.name for fn in found)}; "
        f"fix: rename it so that only one function name follows test_ (e.g. test_{longest}_...), "
        f"or rename one of the functions in course.toml"
    )


def module_of(path: Path | str, course: Course) -> str | None:
    """The course module a check file ``exercises/test_<module>.py`` judges, else None."""
    path = Path(path)
    if path.resolve().parent != course.root / "exercises" or not path.stem.startswith("test_"):
        return None
    module = path.stem[len("test_") :]
    return module if module in {m.name for m in course.modules} else None
