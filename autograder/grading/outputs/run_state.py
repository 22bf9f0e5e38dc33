"""What ``grade --resume`` needs: which students a run into ``OUT`` already finished, and with what.

``OUT/.autograder-run/`` holds

- ``run.json``: the run's *fingerprint*, one digest per part: the kit's files,
  the course's files (``course.toml``, checks, references), the grading
  options that change results (modules, time and memory limits), and the
  versions of the libraries that generate inputs and run the code; and the
  *desk*: the class graded (its ``SUBMISSIONS`` folder) and every option that
  shapes the exports (late policy, submission time source and the times read,
  roster, Canvas and Moodle items), which ``--student`` and ``--resume`` reuse;
- ``students/<student>.json``: one finished student, written as soon as it is
  graded: the digest of the files that were graded and the per-function
  scores (exactly what the outputs are written from).

A resumed run takes a finished student as it is only when the fingerprint is
the same and the student's files did not change; then its outputs are the
same bytes an uninterrupted run writes. A run without ``--resume`` starts the
folder afresh.

(The state is plain files in ``OUT``, written with the grader's permissions:
like every output, it is only as safe as the folder the instructor chose.)
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from autograder.core.outcomes import FunctionScore, StudentResult
from autograder.core.status import Status
from autograder.core.submission import Submission, files_digest
from autograder.runtime import atomic

STATE = ".autograder-run"
FORMAT = 1
VERSIONED_LIBRARIES = ("jax", "jaxlib", "numpy", "hypothesis", "pytest", "flax", "optax", "torch", "chex")


class ResumeError(Exception):
    """``--resume`` cannot continue this ``OUT`` (the message says why and what to do)."""


def fingerprint(course_files: dict[str, bytes], kit_files: dict[str, bytes], options: dict) -> dict[str, str]:
    """One digest per part that decides grades (see the module docstring)."""
    versions: dict[str, str | None] = {}
    for name in VERSIONED_LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "kit": files_digest(kit_files),
        "course": files_digest(course_files),
        "options": json.dumps(options, sort_keys=True),
        "libraries": json.dumps(versions, sort_keys=True),
    }


class RunState:
    def __init__(self, out: Path, run: dict[str, str]):
        self.folder = Path(out) / STATE
        self.run = run
        self.digests: dict[str, str] = {}  # student -> digest of the files graded
        # what :meth:`finished` found, for ``grade`` to say: students whose files changed since they were
        # graded, and students the earlier run never graded (late arrivals)
        self.changed: list[str] = []
        self.new: list[str] = []

    @classmethod
    def start(cls, out: Path, run: dict[str, str], *, resume: bool, desk: dict | None = None) -> RunState:
        """A fresh state (an earlier one is removed), or with ``resume`` the earlier one, checked against ``run``.
        ``desk`` (the class and the export options, see the module docstring) is recorded in either case."""
        state = cls(out, run)
        path = state.folder / "run.json"
        if resume:
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                raise ResumeError(
                    f"{out} has no interrupted run to resume (no {STATE}/run.json): no earlier run to continue into; "
                    "run without --resume or --student"
                ) from None
            if saved.get("format") != FORMAT:
                raise ResumeError(f"{out} was graded by another version of the grader; run without --resume")
            differ = [part for part in run if saved.get("fingerprint", {}).get(part) != run[part]]
            if differ:
                raise ResumeError(
                    f"cannot resume into {out}: the {' and the '.join(differ)} differ from the interrupted run's, "
                    "so its grades would not match a new run's; run without --resume to grade everyone again "
                    "(or resume with the same kit, course, options and libraries)"
                )
            if desk is not None:
                _write(path, _run_json(run, desk))
            return state
        shutil.rmtree(state.folder, ignore_errors=True)
        (state.folder / "students").mkdir(parents=True)
        _write(path, _run_json(run, desk))
        return state

    def _path(self, student: str) -> Path:
        return self.folder / "students" / f"{student}.json"

    def finished(self, submissions: Mapping[str, Submission]) -> dict[str, StudentResult]:
        """The students the interrupted run finished, with their results, if it graded these very files
        (``submissions``: every student's, as this run read them, in order)."""
        found = {}
        self.changed, self.new = [], []
        for student, submitted in submissions.items():
            self.digests[student] = submitted.digest
            saved = self._saved(student)
            if saved is None:
                self.new.append(student)
            elif saved["submission"] == self.digests[student]:
                found[student] = _result(student, saved)
            else:
                self.changed.append(student)
        return found

    def recorded(self, submissions: Mapping[str, Submission]) -> dict[str, StudentResult]:
        """The recorded results of the students of ``submissions``, whether or not their files changed since
        (``grade --student`` regrades only the students it names and keeps the others' grades as they were)."""
        found = {}
        for student, submitted in submissions.items():
            self.digests[student] = submitted.digest
            saved = self._saved(student)
            if saved is not None:
                found[student] = _result(student, saved)
        return found

    def _saved(self, student: str) -> dict | None:
        try:
            saved = json.loads(self._path(student).read_text(encoding="utf-8"))
            saved["submission"], saved["scores"]  # noqa: B018 - both must be there
            return saved
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def record(self, result: StudentResult) -> None:
        """``result``'s student is finished (call :meth:`finished` first: it reads what was graded)."""
        payload = {
            "submission": self.digests[result.student],
            "scores": [_plain(dataclasses.asdict(s)) for s in result.scores],
            "review": list(result.review),
        }
        _write(self._path(result.student), json.dumps(payload, sort_keys=True) + "\n")


def read_run(out: Path) -> dict | None:
    """``OUT``'s record of the run that wrote it (``run.json``: its format, fingerprint and desk), or None."""
    try:
        saved = json.loads((Path(out) / STATE / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


def recorded_options(saved: dict) -> dict:
    """The grading options (modules, limits, seed) a recorded run (:func:`read_run`) was graded with."""
    try:
        options = json.loads(saved.get("fingerprint", {}).get("options", "{}"))
    except (TypeError, ValueError):
        return {}
    return options if isinstance(options, dict) else {}


def _run_json(run: dict[str, str], desk: dict | None) -> str:
    record = {"format": FORMAT, "fingerprint": run, **({"desk": desk} if desk is not None else {})}
    return json.dumps(record, indent=2, sort_keys=True) + "\n"


def _result(student: str, saved: dict) -> StudentResult:
    review = saved.get("review")
    return StudentResult(
        student,
        [_score(s) for s in saved["scores"]],
        review=[str(r) for r in review] if isinstance(review, list) else [],
    )


def _score(saved: dict) -> FunctionScore:
    return FunctionScore(**{**saved, "status": Status(saved["status"])})


def _plain(score: dict) -> dict:
    """JSON-able values (an enum member as its value)."""
    return {k: getattr(v, "value", v) if not isinstance(v, (str, int, float, list)) else v for k, v in score.items()}


def _write(path: Path, text: str) -> None:
    atomic.write_text(path, text)


def recorded_seed(out: Path) -> int | None:
    """The seed the run recorded in ``out`` drew its inputs from (``--resume`` and ``--student`` without
    ``--seed`` keep it); None when there is no such record."""
    try:
        saved = json.loads((Path(out) / STATE / "run.json").read_text(encoding="utf-8"))
        seed = json.loads(saved["fingerprint"]["options"]).get("seed")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return seed if type(seed) is int else None
