"""What ``autograder mutate`` finds, as values: each mutant's :class:`Result`, a module's :class:`ModuleRun`, the
:class:`Listed` survivors of ``benchmarks/mutation-equivalent.toml`` (equivalent or killable), a module's
:func:`score`, the survivors neither list names (:func:`unclassified`), and a run as plain JSON and back
(:func:`runs_to_json`, :func:`runs_from_json`: ``--json`` and ``--from-json``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from autograder.authoring.mutants import Mutant

KILLED, SURVIVED, TIMEOUT, ERROR = "killed", "survived", "timeout", "error"


@dataclass
class Result:
    mutant: Mutant
    outcome: str  # killed, survived, timeout, error
    seconds: float
    check: str = ""  # the first failed check (killed)


@dataclass
class ModuleRun:
    module: str
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0
    baseline_seconds: float = 0.0
    problem: str = ""  # the reference fails its own checks, or the worker could not start


@dataclass(frozen=True)
class Listed:
    equivalent: dict[str, str]  # id -> reason
    killable: dict[str, str]  # id -> the check that would kill it

    @classmethod
    def load(cls, path: Path | None) -> Listed:
        if path is None or not path.is_file():
            return cls({}, {})
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return cls(
            {e["id"]: e["reason"] for e in data.get("equivalent", [])},
            {e["id"]: e["check"] for e in data.get("killable", [])},
        )


def score(run: ModuleRun, listed: Listed) -> tuple[int, int, int, int]:
    """``(killed, survivors not listed equivalent, equivalent, scored total)``; errors count as survivors."""
    killed = sum(r.outcome in (KILLED, TIMEOUT) for r in run.results)
    equivalent = sum(r.outcome not in (KILLED, TIMEOUT) and r.mutant.id in listed.equivalent for r in run.results)
    total = len(run.results) - equivalent
    return killed, total - killed, equivalent, total


def runs_to_json(runs: list[ModuleRun], seconds: float, jobs: int) -> dict:
    """A run's results as plain JSON (``--json``), so that its report can be written again after the list of
    equivalent mutants changes (``--from-json``) without running every mutant again."""
    return {
        "seconds": seconds,
        "jobs": jobs,
        "modules": [
            {
                "module": run.module,
                "seconds": run.seconds,
                "baseline_seconds": run.baseline_seconds,
                "problem": run.problem,
                "results": [
                    {
                        "mutant": {k: v for k, v in vars(r.mutant).items() if k != "source"},
                        "outcome": r.outcome,
                        "seconds": r.seconds,
                        "check": r.check,
                    }
                    for r in run.results
                ],
            }
            for run in runs
        ],
    }


def runs_from_json(data: dict) -> list[ModuleRun]:
    return [
        ModuleRun(
            m["module"],
            [Result(Mutant(**r["mutant"], source=""), r["outcome"], r["seconds"], r["check"]) for r in m["results"]],
            m["seconds"],
            m["baseline_seconds"],
            m["problem"],
        )
        for m in data["modules"]
    ]


def unclassified(runs: list[ModuleRun], listed: Listed) -> list[Result]:
    return [
        r
        for run in runs
        for r in run.results
        if r.outcome not in (KILLED, TIMEOUT)
        and r.mutant.id not in listed.equivalent
        and r.mutant.id not in listed.killable
    ]
