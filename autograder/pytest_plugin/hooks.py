"""The pytest plugin: ``pytest exercises/`` grades the student's files, no flags needed.

Registered through the ``pytest11`` entry point; inert outside a folder with
a ``course.toml``. It

- loads the module under test (``exercises/`` by default, ``solutions/`` with
  ``--solutions``, any folder with ``--submission DIR``) for the ``student``
  fixture, and the reference for the ``reference`` fixture;
- attributes every check to one function of ``course.toml`` by its name;
- fails an untouched stub at once as "not started";
- replaces JAX tracebacks with the student-facing message and hint;
- prints a score table, and writes JSON results with ``--results-json``;
- selects the hypothesis profile: ``student`` locally, ``grading`` with
  ``--grading`` or when ``CI`` is set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder.pytest_plugin import report
from autograder.core.course import Course, CourseError, Function, find_root, load_course
from autograder.core.failures import NotStarted
from autograder.core.submission import SubmissionImportError, load_module, not_started, stub_functions

COURSE_KEY = pytest.StashKey[Course]()
FUNCTION_KEY = pytest.StashKey[Function]()
OUTCOMES_KEY = pytest.StashKey[list]()
SOURCE_KEY = pytest.StashKey[Path]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jax-course", "JAX course autograder")
    group.addoption("--solutions", action="store_true", help="check the reference solutions/ instead of exercises/")
    group.addoption("--submission", metavar="DIR", help="check the <module>.py files in DIR")
    group.addoption(
        "--grading", action="store_true", help="deterministic grading profile (the default when CI is set)"
    )
    group.addoption("--results-json", metavar="PATH", help="write per-function scores and check outcomes as JSON")
    group.addoption(
        "--grading-seed", type=int, metavar="N",
        help="grading profile with inputs drawn from seed N (still deterministic): `autograder grade --seed N`",
    )
    group.addoption(
        "--record-oracle", metavar="DIR", help="record the reference's answers into DIR (used by `autograder release`)"
    )


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
    quiet = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    common = dict(deadline=None, phases=phases, report_multiple_bugs=False, suppress_health_check=quiet)
    # Both profiles are derandomized (their inputs are fixed by the check's code): a student
    # release answers from outputs recorded for exactly these inputs.
    fixed = dict(derandomize=True, database=None, print_blob=False)
    settings.register_profile("student", max_examples=15, **fixed, **common)
    settings.register_profile("grading", max_examples=30, **fixed, **common)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "correctness: a values check; while it fails the function earns nothing")
    root = find_root(Path(config.invocation_params.dir))
    for arg in config.args:
        root = root or find_root(Path(arg) if Path(arg).is_dir() else Path(arg).parent)
    if root is None or not (root / "exercises").is_dir():
        return
    try:
        # The student's files are not validated here: a syntax error or a renamed
        # function must cost only the functions it affects, not the whole run.
        course = load_course(root, verify_files=False)
    except CourseError as err:
        raise pytest.UsageError(str(err)) from None
    config.stash[COURSE_KEY] = course
    config.stash[OUTCOMES_KEY] = []
    if config.getoption("solutions"):
        source = root / "solutions"
    elif config.getoption("submission"):
        source = Path(config.getoption("submission")).resolve()
    else:
        source = root / "exercises"
    config.stash[SOURCE_KEY] = source

    from hypothesis import settings

    register_profiles()
    if not config.getoption("hypothesis_profile", None):
        grading = config.getoption("grading") or bool(os.environ.get("CI"))
        settings.load_profile("grading" if grading else "student")
    seed = config.getoption("grading_seed", None)
    if seed is not None:
        use_seed(seed)


def use_seed(seed: int) -> None:
    """The grading profile, drawing its inputs from ``seed`` instead of from each check's code.

    Inputs stay deterministic for one seed (no database, a forced seed), but
    differ from the published ones a release recorded answers for.
    """
    from hypothesis import core, settings

    settings.register_profile("grading-seeded", settings.get_profile("grading"), derandomize=False)
    settings.load_profile("grading-seeded")
    core.global_force_seed = seed


def _course(config: pytest.Config) -> Course | None:
    return config.stash.get(COURSE_KEY, None)


def module_of(path: Path, course: Course) -> str | None:
    """The course module a check file ``exercises/test_<module>.py`` judges."""
    if Path(path).resolve().parent != course.root / "exercises":
        return None
    name = Path(path).stem
    if not name.startswith("test_"):
        return None
    module = name[len("test_"):]
    return module if module in {m.name for m in course.modules} else None


def function_of(test_name: str, module: str, course: Course) -> Function | None:
    """The function a check judges: the longest function name its test name contains."""
    candidates = [fn for fn in course.module(module).functions if fn.name in test_name]
    return max(candidates, key=lambda fn: len(fn.name)) if candidates else None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    course = _course(config)
    if course is None:
        return
    for item in items:
        module = module_of(item.path, course)
        if module is None:
            continue
        fn = function_of(getattr(item, "originalname", item.name), module, course)
        if fn is None:
            raise pytest.UsageError(
                f"{item.nodeid}: a check's name must contain the name of the function it judges "
                f"(one of {[f.name for f in course.module(module).functions]})"
            )
        item.stash[FUNCTION_KEY] = fn


_loaded: dict[tuple[Path, str], object] = {}


def _load_student(config: pytest.Config, module: str):
    source = config.stash[SOURCE_KEY]
    key = (source, module)
    if key not in _loaded:
        try:
            _loaded[key] = load_module(source / f"{module}.py", module)
        except SubmissionImportError as err:
            _loaded[key] = err
    loaded = _loaded[key]
    if isinstance(loaded, SubmissionImportError):
        return _Unimportable(loaded)
    return loaded


class _Unimportable:
    """Stands in for a module that failed to import: every use fails the check with the import error."""

    def __init__(self, error: SubmissionImportError):
        self._error = error

    def __getattr__(self, name: str):
        raise self._error


def _module_under_test(request: pytest.FixtureRequest) -> str:
    course = _course(request.config)
    module = module_of(request.path, course) if course else None
    if module is None:
        pytest.fail(f"the {request.fixturename} fixture is only available in exercises/test_<module>.py")
    return module


@pytest.fixture(scope="module")
def student(request: pytest.FixtureRequest):
    """The module under test: the student's ``<module>.py`` (or the solution with ``--solutions``)."""
    return _load_student(request.config, _module_under_test(request))


@pytest.fixture(scope="module")
def reference(request: pytest.FixtureRequest):
    """The reference oracle for the module under test: expected values come only from here."""
    record_into = request.config.getoption("record_oracle")
    return load_reference(
        _course(request.config), _module_under_test(request), Path(record_into).resolve() if record_into else None
    )


_oracles: dict[tuple[Path, str], object] = {}


def load_reference(course: Course, module: str, record_into: Path | None = None):
    """The reference oracle of ``module``, loaded once per process (the grader preloads it
    before any student code runs, then removes ``solutions/`` from the sandbox).

    Without ``solutions/`` (a student release) it is the recorded oracle in
    ``oracle/``; with ``record_into`` the live reference records its answers there.
    """
    from autograder.core.oracle import Oracle
    from autograder.core.recorded import RecordedOracle, RecordingOracle

    key = (course.root, module, record_into)
    if key not in _oracles:
        solutions, recorded = course.root / "solutions", course.root / "oracle"
        if record_into is not None:
            contracted = {fn.name for fn in course.module(module).functions}
            _oracles[key] = RecordingOracle(Oracle(solutions, module), record_into, contracted)
        elif not (solutions / f"{module}.py").is_file() and (recorded / f"{module}.json").is_file():
            _oracles[key] = RecordedOracle(recorded, module)
        else:
            _oracles[key] = Oracle(solutions, module)
    return _oracles[key]


_stubs: dict[Path, set[str]] = {}


def _is_stub(config: pytest.Config, fn: Function) -> bool:
    path = config.stash[SOURCE_KEY] / f"{fn.module}.py"
    if path not in _stubs:
        try:
            _stubs[path] = stub_functions(path)
        except (OSError, SyntaxError):
            _stubs[path] = set()
    return fn.name in _stubs[path]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """An untouched stub fails before its fixtures are set up (a training scenario costs seconds)."""
    fn = item.stash.get(FUNCTION_KEY, None)
    if fn is not None and _is_stub(item.config, fn):
        raise not_started(fn.module, fn.name)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    """An untouched stub fails at once, without running its checks."""
    fn = pyfuncitem.stash.get(FUNCTION_KEY, None)
    if fn is not None and _is_stub(pyfuncitem.config, fn):
        raise not_started(fn.module, fn.name)
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """A check whose every example was left unjudged by a recorded oracle is skipped, not failed."""
    from autograder.core import recorded

    before = len(recorded.misses())
    outcome = yield
    excinfo = outcome.excinfo
    if excinfo is None or len(recorded.misses()) == before:
        return
    from hypothesis.errors import FailedHealthCheck, Unsatisfiable

    if issubclass(excinfo[0], (Unsatisfiable, FailedHealthCheck)):
        outcome.force_exception(pytest.skip.Exception(f"{recorded.NOT_RECORDED}: {recorded.misses()[before]}"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.getoption("record_oracle", None):
        from autograder.core.recorded import RecordingOracle

        RecordingOracle.save_all()


def _full_tracebacks(config: pytest.Config) -> bool:
    return config.getoption("verbose") > 0 or config.getoption("tbstyle") in ("long", "native")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    rep: pytest.TestReport = outcome.get_result()
    fn = item.stash.get(FUNCTION_KEY, None)
    if fn is None or rep.skipped or (rep.when != "call" and rep.passed):
        return
    config = item.config
    if rep.failed:
        exc = call.excinfo.value
        source = config.stash[SOURCE_KEY]
        message = report.student_message(exc, fn, [source / f"{fn.module}.py"], item.fixturenames)
        verdict = report.NOT_STARTED if report.is_not_started(exc) else report.FAILED
        if _full_tracebacks(config):
            rep.sections.append(("what the grader says", message))
        else:
            rep.longrepr = message
    else:
        message, verdict = "", report.PASSED
    if rep.when == "call" or rep.failed:
        config.stash[OUTCOMES_KEY].append(
            report.CheckOutcome(
                fn.module,
                fn.name,
                getattr(item, "originalname", item.name),
                verdict,
                correctness=item.get_closest_marker("correctness") is not None,
                message=message,
            )
        )


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    """A stub's checks are counted as "not started": one letter each, no failure section.

    They still fail the run (the exit status counts them); the score table
    lists the functions that are not started.
    """
    if report.failed and isinstance(report.longrepr, str) and "is not started yet" in report.longrepr:
        return "not started", "n", ("NOT STARTED", {"yellow": True})
    return None


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    course = _course(config)
    if course is None:
        return None
    from hypothesis import settings

    return [
        f"course: {course.title} ({len(course.modules)} modules)",
        f"checking: {config.stash[SOURCE_KEY]} (hypothesis profile: {settings._current_profile})",
    ]


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    course = _course(config)
    if course is None:
        return
    outcomes = config.stash[OUTCOMES_KEY]
    scores = report.score_functions(course, outcomes)
    table = report.score_table(course, scores)
    if table:
        terminalreporter.write_sep("=", "score")
        terminalreporter.write_line(table)
        if all(score.status == report.NOT_STARTED for score in scores):
            terminalreporter.write_line("")
            terminalreporter.write_line(course.welcome.strip())
    path = config.getoption("results_json")
    if path:
        report.write_results(Path(path), scores, outcomes)
