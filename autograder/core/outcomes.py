"""The one result model every output uses: check id, check outcome, function score, student result.

The pytest score table and ``--results-json``, ``grade``'s ``grades.csv`` /
``results.json`` / ``summary.md`` and the nbgrader check cells all read these
types; :func:`score_checks` is the one rule turning outcomes into points (:func:`score_functions` applies it
to every function, Gradescope to a function's visible and after-the-due-date parts), and :func:`points_text`
the one way every output writes points.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from autograder.core.course import Course, Function
from autograder.core.status import Status


@dataclass(frozen=True, order=True)
class CheckId:
    """A check: the course module and the test name, written ``<module>::<test name>`` on the wire."""

    module: str
    test: str

    def __str__(self) -> str:
        return f"{self.module}::{self.test}"

    @classmethod
    def parse(cls, text: str) -> CheckId:
        module, sep, test = text.partition("::")
        if not sep or not module or not test:
            raise ValueError(f"not a check id: {text!r}")
        return cls(module, test)


@dataclass
class CheckOutcome:
    """One check (pytest test) of one function."""

    module: str
    function: str
    check: str  # the test name
    status: Status
    correctness: bool = False
    message: str = ""

    @property
    def id(self) -> CheckId:
        return CheckId(self.module, self.check)

    def to_json(self) -> dict:
        """Plain JSON values (the status as its string): what ``--results-json`` writes and a check's
        report carries across pytest-xdist's wire."""
        return {**asdict(self), "status": str(self.status)}

    @classmethod
    def from_json(cls, data: dict) -> CheckOutcome:
        return cls(**{**data, "status": Status.parse(data["status"])})


@dataclass
class FunctionScore:
    """A function's points and status, from the outcomes of its checks."""

    module: str
    function: str
    points: float
    max_points: float
    status: Status
    passed: int
    total: int
    messages: list[str] = field(default_factory=list)

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.function}"

    @property
    def message(self) -> str:
        """The messages of the failed checks, one per line."""
        return "\n".join(self.messages)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> FunctionScore:
        return cls(
            data["module"],
            data["function"],
            float(data["points"]),
            float(data["max_points"]),
            Status.parse(data["status"]),
            int(data["passed"]),
            int(data["total"]),
            list(data["messages"]),
        )


@dataclass
class StudentResult:
    """Everything graded for one student."""

    student: str
    scores: list[FunctionScore]
    outcomes: list[CheckOutcome] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # for benchmarks; never written to the outputs
    # what an instructor must look at ("needs review: what, file:line"): the static screen's findings, what the
    # grading process's audit hook saw, tampering detected (autograder.core.screen)
    review: list[str] = field(default_factory=list)

    def points_by_function(self) -> dict[str, float]:
        return {s.qualname: s.points for s in self.scores}


def score_functions(course: Course, outcomes: Iterable[CheckOutcome]) -> list[FunctionScore]:
    """Points per function, in ``course.toml`` order, for every function that was checked.

    A function earns ``points * passed / total``, and nothing while one of
    its correctness checks (its values against the reference) fails: a wrong
    answer earns no points for being pure or fast. It is not started while no
    check passed and one found the stub; passed when every check passed;
    failed otherwise.
    """
    by_function: dict[tuple[str, str], list[CheckOutcome]] = {}
    for outcome in outcomes:
        by_function.setdefault((outcome.module, outcome.function), []).append(outcome)
    return [score_checks(fn, checks) for fn in course.functions if (checks := by_function.get((fn.module, fn.name)))]


def score_checks(
    fn: Function, checks: list[CheckOutcome], *, of: int | None = None, gate_failed: bool | None = None
) -> FunctionScore:
    """The one rule: what ``checks`` of ``fn`` earn.

    With ``of`` (a function's checks in all) they are a part of them (Gradescope's visible and after-the-due-date
    parts): the part is worth ``points * len(checks) / of`` (rounded to 2 places) and each passed check
    ``points / of``; ``gate_failed`` then says whether a correctness check of the whole function failed (by
    default: one of ``checks``)."""
    total = len(checks) if of is None else of
    passed = sum(c.status == Status.PASSED for c in checks)
    if any(c.status == Status.NOT_STARTED for c in checks) and passed == 0:
        status = Status.NOT_STARTED
    elif passed == len(checks):
        status = Status.PASSED
    else:
        status = Status.FAILED
    if gate_failed is None:
        gate_failed = any(c.correctness and c.status != Status.PASSED for c in checks)
    points = 0.0 if gate_failed else round(fn.points * passed / total, 2)
    worth = fn.points if of is None else round(fn.points * len(checks) / total, 2)
    messages = [c.message for c in checks if c.status != Status.PASSED and c.message]
    return FunctionScore(fn.module, fn.name, points, worth, status, passed, len(checks), messages)


def points_text(value: float, places: int | None = 2) -> str:
    """Points as every output writes them: ``{:g}`` of the value rounded to ``places``. ``None`` writes the value
    unrounded: the pytest score table and the notebooks' lines show a function's points as ``course.toml`` and
    the score hold them, as they always have (rounding there would change what students see today)."""
    return f"{value if places is None else round(value, places):g}"


def results_payload(scores: list[FunctionScore], outcomes: list[CheckOutcome]) -> dict:
    """What ``--results-json`` writes: per-function scores and every check's outcome."""
    return {
        "score": round(sum(s.points for s in scores), 2),
        "max_score": sum(s.max_points for s in scores),
        "functions": [s.to_json() for s in scores],
        "checks": [o.to_json() for o in outcomes],
    }
