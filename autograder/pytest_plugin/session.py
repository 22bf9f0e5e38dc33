"""One run of the course's checks: the course, what is checked, the outcomes, the caches.

:class:`CourseSession` is created once in ``pytest_configure`` (inert outside
a course) and found with :func:`session_of`. Settings are resolved there,
once. The grading side (:mod:`autograder.grading.untrusted.child`,
:mod:`autograder.grading.trusted.verifier`) uses its public methods.

Caches, and why:

- the student's modules: imported once per session (the ``student`` fixture
  and the grading child's import events share the import);
- which functions are still stubs: parsed once per file and session;
- the references: per *process*, in :data:`autograder.core.oracle.REFERENCES`
  (see there: kept warm across sessions, and loaded before ``solutions/`` is
  removed from a grading sandbox).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from autograder.core.attribution import AttributionError, attribute, module_of
from autograder.core.course import Course, Function
from autograder.core.oracle import REFERENCES, OwnAnswers
from autograder.core.outcomes import CheckOutcome
from autograder.core.status import Status
from autograder.core.submission import (
    SubmissionImportError,
    changed_givens,
    given_note,
    load_module,
    restore_givens,
    stub_functions,
)

SESSION_KEY = pytest.StashKey["CourseSession"]()
FUNCTION_KEY = pytest.StashKey[Function]()
COMPILE_SECONDS_KEY = pytest.StashKey[float]()  # a check that waited long for JAX to compile
UNJUDGED_KEY = pytest.StashKey[int]()  # a passed check's inputs a release's recorded oracle could not answer


@dataclass(frozen=True)
class Settings:
    """Everything a run's options decide, resolved once."""

    source: Path  # the folder of the <module>.py files under test
    profile: str  # the hypothesis profile
    grading: bool  # --grading or CI: deterministic, no student compilation cache
    results_json: Path | None
    full_tracebacks: bool  # -v or --tb=long/native: keep pytest's report, add the grader's message

    @classmethod
    def from_config(cls, config: pytest.Config, root: Path, profile: str) -> Settings:
        if config.getoption("solutions"):
            source = root / "solutions"
        elif config.getoption("submission"):
            source = Path(config.getoption("submission")).resolve()
        else:
            source = root / "exercises"
        results = config.getoption("results_json")
        full = config.getoption("verbose") > 0 or config.getoption("tbstyle") in ("long", "native")
        grading = bool(config.getoption("grading") or os.environ.get("CI"))
        return cls(source, profile, grading, Path(results) if results else None, full)


class Unimportable:
    """Stands in for a module that failed to import: every use fails the check with the import error."""

    def __init__(self, error: SubmissionImportError):
        self.error = error

    def __getattr__(self, name: str):
        raise self.error


@dataclass
class CourseSession:
    course: Course
    settings: Settings
    outcomes: list[CheckOutcome] = field(default_factory=list)
    # The student's local progress (autograder.core.progress), only in their own run on exercises/:
    # grading, --solutions and --submission neither read nor write it.
    progress: Any = None
    slow_compiles: dict[str, float] = field(default_factory=dict)  # check name -> seconds spent compiling
    # check name -> inputs a release's recorded oracle could not answer while the check passed
    partly_judged: dict[str, int] = field(default_factory=dict)
    # "module.function" -> why one of its checks was skipped (a release that cannot answer it)
    skipped: dict[str, str] = field(default_factory=dict)
    record_into: Path | None = None  # `--record-oracle DIR` (autograder release)
    # A grading process of a module judged on the trusted side: no reference, the student's own answers
    # stand in for it (autograder.core.oracle.OwnAnswers). Set by autograder.grading.untrusted.child.
    own_answers: bool = False
    givens: Path | None = (
        None  # there and on the trusted side: the givens fixtures are answered from (autograder.recording.givens)
    )
    _students: dict[str, ModuleType | Unimportable] = field(default_factory=dict)
    _stubs: dict[str, frozenset[str]] = field(default_factory=dict)
    _own_answers: dict[str, OwnAnswers] = field(default_factory=dict)

    # -- attribution ------------------------------------------------------
    def attribute(self, item: pytest.Item) -> Function | None:
        """The function ``item`` judges (stored on it), None for a file that is not a course check file.

        Raises :class:`autograder.core.attribution.AttributionError` for a check naming no function or two.
        """
        module = module_of(item.path, self.course)
        if module is None:
            return None
        fn = attribute(getattr(item, "originalname", item.name), module, self.course)
        item.stash[FUNCTION_KEY] = fn
        return fn

    @staticmethod
    def function_of(item: pytest.Item) -> Function | None:
        return item.stash.get(FUNCTION_KEY, None)

    def module_under_test(self, path: Path) -> str | None:
        return module_of(path, self.course)

    # -- the run's results, from the checks' reports -------------------------
    def facts_of(self, item: pytest.Item, report: pytest.TestReport) -> dict:
        """What the run's results need from one report of a course check, as plain JSON values (they
        cross pytest-xdist's wire when a worker ran the check): the plugin adds the check's ``outcome``."""
        fn = self.function_of(item)
        assert fn is not None  # a course check (the plugin asks for no other)
        facts: dict[str, Any] = {"module": fn.module}
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            facts["skipped"] = [fn.qualname, reason.removeprefix("Skipped: ")]
        if report.when == "call":
            if COMPILE_SECONDS_KEY in item.stash:
                facts["compile_seconds"] = [item.name, item.stash[COMPILE_SECONDS_KEY]]
            if UNJUDGED_KEY in item.stash:
                facts["unjudged"] = [item.name, item.stash[UNJUDGED_KEY]]
        return facts

    def record(self, report: pytest.TestReport) -> None:
        """Add one report's facts (:meth:`facts_of`) to the run's results."""
        facts = getattr(report, "course", None)
        if not facts:
            return
        if "skipped" in facts:
            qualname, reason = facts["skipped"]
            self.skipped.setdefault(qualname, reason)
        if "compile_seconds" in facts:
            name, seconds = facts["compile_seconds"]
            self.slow_compiles[name] = seconds
        if "unjudged" in facts:
            name, count = facts["unjudged"]
            self.partly_judged[name] = count
        if "outcome" in facts:
            self.outcomes.append(CheckOutcome.from_json(facts["outcome"]))

    def facts_of_crash(self, nodeid: str, rootpath: Path) -> dict | None:
        """The facts of a course check whose process died while it ran (pytest-xdist reports it, not the
        check): it failed, and as a correctness failure its function earns nothing, as in a run in one
        process, where the death of the process leaves no score at all. None for another test."""
        path, _, test = nodeid.partition("::")
        module, name = module_of(rootpath / path, self.course), test.split("[")[0]  # the check, without its parameters
        if module is None or not name:
            return None
        try:
            fn = attribute(name, module, self.course)
        except AttributionError:
            return None
        message = (
            f"{fn.qualname}: the process running this check died before the check finished "
            "(the code crashed Python, exited it with os._exit, or was killed)"
        )
        return {
            "module": module,
            "outcome": CheckOutcome(fn.module, fn.name, name, Status.FAILED, True, message).to_json(),
        }

    def reports(self, rootpath: Path) -> ReportsOf:
        """The plugin object that records every report of this run (registered in ``pytest_configure``);
        node ids are relative to ``rootpath``."""
        return ReportsOf(self, rootpath)

    def outcomes_in_course_order(self) -> list[CheckOutcome]:
        """The outcomes by module in ``course.toml`` order, in the order each module's checks ran: the same
        list whether the modules ran one after another or side by side (:mod:`.parallel`)."""
        return sorted(self.outcomes, key=lambda outcome: self._position(outcome.module))

    def reports_in_course_order(self, reports: list) -> list:
        """``reports`` (pytest's) with the course's checks by module in ``course.toml`` order, each
        module's in the order they ran, and any other report after them."""
        return sorted(reports, key=lambda report: self._position((getattr(report, "course", None) or {}).get("module")))

    def _position(self, module: str | None) -> int:
        names = [m.name for m in self.course.modules]
        return names.index(module) if module in names else len(names)

    # -- what is checked --------------------------------------------------
    def student(self, module: str) -> ModuleType | Unimportable:
        """The module under test, imported once per session (or what stands in when it cannot be)."""
        if module not in self._students:
            try:
                loaded = load_module(self.settings.source / f"{module}.py", module)
                course_file = self.course_given(module)
                if course_file is not None:  # the checks use the course's own given code (the student is told)
                    restore_givens(loaded, course_file, {fn.name for fn in self.course.module(module).functions})
                self._students[module] = loaded
            except SubmissionImportError as err:
                self._students[module] = Unimportable(err)
        return self._students[module]

    def course_given(self, module: str) -> Path | None:
        """The course's own stub of ``module`` (its given code): the course's ``exercises/`` when the student's
        files are elsewhere (``--submission``, ``grade``), else a release's ``oracle/given/``; None when the
        student's file is the only copy."""
        exercises = self.course.root / "exercises" / f"{module}.py"
        if self.settings.source.resolve() != exercises.parent.resolve() and exercises.is_file():
            return exercises
        released = self.course.root / "oracle" / "given" / f"{module}.py"
        return released if released.is_file() else None

    def given_notes(self, modules) -> list[str]:
        """One line per module of ``modules`` whose given code the student changed."""
        notes = []
        for module in modules:
            course_file = self.course_given(module)
            try:
                if course_file is None:
                    continue
                names = changed_givens(
                    (self.settings.source / f"{module}.py").read_text(encoding="utf-8"),
                    course_file.read_text(encoding="utf-8"),
                    {fn.name for fn in self.course.module(module).functions},
                )
            except (OSError, ValueError, KeyError):
                continue
            if names:
                notes.append(given_note(module, names))
        return notes

    def student_file(self, module: str) -> Path:
        return self.settings.source / f"{module}.py"

    def is_stub(self, fn: Function) -> bool:
        """Whether ``fn`` is still the stub in the file under test: the one test of "not started"."""
        if fn.module not in self._stubs:
            try:
                self._stubs[fn.module] = frozenset(stub_functions(self.student_file(fn.module)))
            except (OSError, SyntaxError, ValueError):  # unreadable, not Python, not UTF-8: the import says why
                self._stubs[fn.module] = frozenset()
        return fn.name in self._stubs[fn.module]

    # -- the references ---------------------------------------------------
    def reference(self, module: str):
        """The live reference (in a grading process of a module judged on the trusted side, the student's
        own answers); in a student release (no ``solutions/``) the recorded oracle in ``oracle/``;
        with ``--record-oracle DIR`` the live reference recording its answers into DIR."""
        from autograder.recording.givens import GivensFirst
        from autograder.recording.recorded import RecordedOracle, RecordingOracle

        givens = self.givens_of(module)
        if self.own_answers:
            if module not in self._own_answers:
                self._own_answers[module] = OwnAnswers(module, self.student(module))
            if self.givens is None:
                return self._own_answers[module]
            return GivensFirst(module, givens, self._own_answers[module])
        solutions, recorded = self.course.root / "solutions", self.course.root / "oracle"
        if self.record_into is not None:
            contracted = {fn.name for fn in self.course.module(module).functions}
            return RecordingOracle(REFERENCES.load(solutions, module), self.record_into, contracted)
        if not (solutions / f"{module}.py").is_file() and (recorded / f"{module}.json").is_file():
            return RecordedOracle(recorded, module)
        if givens is not None:  # the trusted side: the fixtures from the givens the grading processes have
            return GivensFirst(module, givens, REFERENCES.load(solutions, module), live=True)
        return REFERENCES.load(solutions, module)

    def givens_of(self, module: str):
        """The givens recorded for ``module`` (a RecordedOracle), or None."""
        from autograder.recording.recorded import RecordedOracle

        if self.givens is None or not (self.givens / f"{module}.json").is_file():
            return None
        return RecordedOracle(self.givens, module)

    def load_all_references(self) -> None:
        """Load every module's reference, before ``solutions/`` leaves a grading sandbox.

        Every module, not only the graded ones: later modules build their scenarios
        with earlier references (training's loaders come from data's).
        """
        for module in self.course.modules:
            self.reference(module.name)


class ReportsOf:
    """Records each check's report into its session: in the process that ran the check, and in the
    process that gathers an xdist run's reports (its workers send them there)."""

    def __init__(self, session: CourseSession, rootpath: Path):
        self.session, self.rootpath = session, rootpath

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Record the report; a check's student message is shown alone, without the line naming the
        xdist worker that ran it (after the terminal's own use of it: ``-v`` still names the worker)."""
        self.session.record(report)
        if getattr(report, "course_status", None) and isinstance(report.longrepr, str):
            vars(report).pop("node", None)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched) -> None:
        """pytest-xdist's hook for a check whose worker died: its report gets the check's facts, and the
        student's message instead of the worker's name. The check is not run again: xdist hands the rest
        of its module to a new worker, crashed check included, which would only die again."""
        facts = self.session.facts_of_crash(crashitem, self.rootpath)
        if facts is None:
            return
        report.course = facts  # type: ignore[attr-defined]  # the plugin's own report attributes
        report.course_status = facts["outcome"]["status"]  # type: ignore[attr-defined]
        report.longrepr = facts["outcome"]["message"]
        report.location = (report.location[0], None, crashitem.partition("::")[2])  # the failure's title: the check
        for work_unit in getattr(sched, "workqueue", {}).values():  # --dist loadfile: {file: {nodeid: done}}
            if crashitem in work_unit:
                work_unit[crashitem] = True

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter):
        """Failures are listed by module in course order, as the score table is, whether the modules ran in
        this process or side by side (where reports arrive as the workers finish them)."""
        for category, reports in terminalreporter.stats.items():
            terminalreporter.stats[category] = self.session.reports_in_course_order(reports)
        return (yield)


def session_of(config: pytest.Config) -> CourseSession | None:
    """The run's course session; None outside a course folder."""
    return config.stash.get(SESSION_KEY, None)


def course_session_of(config: pytest.Config) -> CourseSession:
    """The course session of a run that always has one (a grading process, the trusted verifier)."""
    found = session_of(config)
    if found is None:
        raise RuntimeError("this pytest run has no course session (it does not run in a course folder)")
    return found
