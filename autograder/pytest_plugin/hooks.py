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
from autograder.core import compile_cache
from autograder.core.course import Course, CourseError, Function, find_root, load_course
from autograder.core.devices import use_course_devices
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
    quiet = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]
    common = dict(deadline=None, phases=phases, report_multiple_bugs=False, suppress_health_check=quiet)
    settings.register_profile("student", max_examples=15, **common)
    settings.register_profile("grading", max_examples=30, derandomize=True, database=None, print_blob=False, **common)


def course_root_of(invocation_dir: Path, args: list[str]) -> Path | None:
    """The course kit a pytest run is about: at or above where it runs, or above one of its paths."""
    root = find_root(Path(invocation_dir))
    for arg in args:
        if root is None and not arg.startswith("-"):
            path = Path(arg.split("::")[0])
            root = find_root(path if path.is_dir() else path.parent)
    return root if root is not None and (root / "exercises").is_dir() else None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """The earliest hook of a plugin: the course's 8 CPU devices, before any conftest imports JAX."""
    if course_root_of(early_config.invocation_params.dir, args) is not None:
        use_course_devices()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "correctness: a values check; while it fails the function earns nothing")
    root = course_root_of(config.invocation_params.dir, config.args)
    if root is None:
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
    if not (config.getoption("grading") or os.environ.get("CI")):
        use_compile_cache(compile_cache.student_cache_dir(root))


def use_compile_cache(cache_dir: Path | None) -> None:
    """Keep compiled programs in the student's ``.jax_cache/`` (see :mod:`autograder.core.compile_cache`).

    Left alone when the process already has a cache (``grade`` sets one per run through the
    environment) or when it is switched off.
    """
    if cache_dir is None:
        return
    import jax

    if jax.config.jax_compilation_cache_dir:
        return
    for name, value in compile_cache.settings(cache_dir).items():
        jax.config.update(name, value)


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
    return load_reference(_course(request.config), _module_under_test(request))


_oracles: dict[tuple[Path, str], object] = {}


def load_reference(course: Course, module: str):
    """The reference oracle of ``module``, loaded once per process (the grader preloads it
    before any student code runs, then removes ``solutions/`` from the sandbox)."""
    from autograder.core.oracle import Oracle

    key = (course.root, module)
    if key not in _oracles:
        _oracles[key] = Oracle(course.root / "solutions", module)
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
