"""The pytest plugin: ``pytest exercises/`` grades the student's files, no flags needed.

Registered through the ``pytest11`` entry point (``autograder.plugin``); inert
outside a folder with a ``course.toml``. It

- loads the module under test (``exercises/`` by default, ``solutions/`` with
  ``--solutions``, any folder with ``--submission DIR``) for the ``student``
  fixture, and the reference for the ``reference`` fixture;
- attributes every check to one function of ``course.toml`` by its name
  (:mod:`autograder.core.attribution`);
- fails an untouched stub at once as "not started";
- replaces JAX tracebacks with the student-facing message and hint;
- prints a score table, and writes JSON results with ``--results-json`` (:mod:`.summary`);
- says which checks waited long for JAX to compile (``compile_time``);
- keeps Python's garbage collector off the heap the imports left (``garbage``);
- in a student's own run on ``exercises/`` (not the grading profile), keeps
  their local progress (``.autograder/progress.json``), which decides when a
  failed check shows the direct hint (``autograder.core.hints``);
- selects the hypothesis profile: ``student`` locally, ``grading`` with
  ``--grading`` or when ``CI`` is set;
- checks a run of several modules side by side, one process per core
  (:mod:`autograder.pytest_plugin.parallel`); the run's results are built from
  the checks' reports, wherever they ran.

The run's state lives in one :class:`~autograder.pytest_plugin.session.CourseSession`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import pytest

from autograder.core import hints, versions
from autograder.core import progress as local_progress
from autograder.core.attribution import AttributionError
from autograder.core.course import CourseError, find_root, load_course
from autograder.core.failures import status_of
from autograder.core.outcomes import CheckOutcome
from autograder.core.status import Status
from autograder.core.submission import SubmissionImportError, not_started
from autograder.pytest_plugin import garbage, parallel, profiles, report
from autograder.pytest_plugin.compile_time import CompileClock, is_slow
from autograder.pytest_plugin.decided import MARKER_HELP, SOURCE, decided_where, failure_from_source, source_analysis
from autograder.pytest_plugin.session import (
    COMPILE_SECONDS_KEY,
    SESSION_KEY,
    UNJUDGED_KEY,
    CourseSession,
    Settings,
    Unimportable,
    session_of,
)
from autograder.runtime import compile_cache, devices, lowering, staging
from autograder.runtime.devices import use_course_backend


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jax-course", "JAX course autograder")
    group.addoption("--solutions", action="store_true", help="check the reference solutions/ instead of exercises/")
    group.addoption("--submission", metavar="DIR", help="check the <module>.py files in DIR")
    group.addoption("--grading", action="store_true", help="deterministic grading profile (the default when CI is set)")
    group.addoption("--results-json", metavar="PATH", help="write per-function scores and check outcomes as JSON")
    group.addoption(
        "--grading-seed",
        type=int,
        metavar="N",
        help="grading profile with inputs drawn from seed N (still deterministic): `autograder grade --seed N`",
    )
    group.addoption(
        "--record-oracle", metavar="DIR", help="record the reference's answers into DIR (used by `autograder release`)"
    )


def course_root_of(invocation_dir: Path, paths: list[str]) -> Path | None:
    """The course kit a pytest run is about: the kit of its first path in one, else the kit at or above where it runs.

    The path wins: ``pytest /elsewhere/course/exercises/test_prng.py`` run
    from inside another kit (a notebook's check cell, a kit's own tests)
    checks against the kit that file belongs to.
    """

    def kit(folder: Path) -> Path | None:
        root = find_root(folder)
        return root if root is not None and (root / "exercises").is_dir() else None

    for arg in paths:
        path = Path(invocation_dir, str(arg).split("::")[0])
        root = kit(path if path.is_dir() else path.parent) if path.exists() else None
        if root is not None:
            return root
    return kit(Path(invocation_dir))


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """The earliest hook of a plugin: the course's JAX backend (JAX's CPU backend with 8 devices, whatever
    accelerator the machine has; quick compilation with the flags this XLA knows), before any conftest imports
    JAX; a run of several modules is spread over the cores (:mod:`.parallel`). The run's first lines say when
    an accelerator was set aside, and when a library is newer than the kit was tested with."""
    paths = early_config.known_args_namespace.file_or_dir or []
    root = course_root_of(early_config.invocation_params.dir, paths)
    if root is not None:
        devices.hold_warnings()  # pytest captures what this hook prints: pytest_configure says it
        use_course_backend()
        notes = [devices.backend_note(), *devices.held_warnings(), versions.newer_than_tested()]
        if not os.environ.get("PYTEST_XDIST_WORKER"):  # the controller says it, once
            early_config.stash[_FIRST_LINES] = [line for line in notes if line]
        parallel.spread_over_cores(early_config, root, args)


_FIRST_LINES = pytest.StashKey[list]()


def pytest_configure(config: pytest.Config) -> None:
    # The run's first lines (before pytest's header): an accelerator set aside, an XLA flag dropped, a library
    # newer than tested (pytest_load_initial_conftests).
    for line in config.stash.get(_FIRST_LINES, []):
        print(line, file=sys.stderr, flush=True)
    config.addinivalue_line("markers", "correctness: a values check; while it fails the function earns nothing")
    config.addinivalue_line("markers", MARKER_HELP)
    root = course_root_of(config.invocation_params.dir, config.args)
    if root is None:
        return
    try:
        # The student's files are not validated here: a syntax error or a renamed
        # function must cost only the functions it affects, not the whole run.
        course = load_course(root, verify_files=False)
    except CourseError as err:
        raise pytest.UsageError(str(err)) from None

    explicit = config.getoption("hypothesis_profile", None)
    profile = profiles.choose(explicit, config.getoption("grading"))
    settings_ = Settings.from_config(config, root, profile)
    config.stash[SESSION_KEY] = session = CourseSession(course, settings_)
    config.pluginmanager.register(session.reports(config.rootpath), "jax-course-reports")
    # Grading neither reads nor writes a student's local progress.
    own_run = not (settings_.grading or config.getoption("solutions") or config.getoption("submission"))
    session.progress = local_progress.load(root) if own_run else None
    if parallel.is_controller(config):
        return  # the workers check; this process only gathers their reports (no JAX, no hypothesis here)
    from hypothesis import settings

    profiles.register_profiles()
    if not explicit:
        settings.load_profile(profile)
    if config.getoption("grading_seed", None) is not None:
        profiles.use_seed(config.getoption("grading_seed"))
    record_into = config.getoption("record_oracle", None)
    session.record_into = Path(record_into).resolve() if record_into else None
    if not settings_.grading:
        use_compile_cache(compile_cache.student_cache_dir(root))
    lowering.reuse_ir_contexts()
    staging.stage_without_compiling()
    garbage.skip_final_collection(config)


def use_compile_cache(cache_dir: Path | None) -> None:
    """Keep compiled programs in the student's ``.jax_cache/`` (see :mod:`autograder.runtime.compile_cache`).

    Left alone when the process already has a cache (``grade`` gives each student's processes
    their own) or when it is switched off.
    """
    if cache_dir is None:
        return
    import jax

    if jax.config.jax_compilation_cache_dir:  # type: ignore[attr-defined]  # a flag, read as an attribute
        return
    compile_cache.switch_on(cache_dir)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    course_session = session_of(config)
    if course_session is None:
        return
    for item in items:
        try:
            fn = course_session.attribute(item)
        except AttributionError as err:
            raise pytest.UsageError(f"{item.nodeid}: {err}") from None
        if fn is not None and not course_session.settings.full_tracebacks:
            # The student's message replaces a failed check's report (pytest_runtest_makereport): pytest need
            # not format the traceback first, which parses the source of every frame (about 70 ms a failure).
            item.repr_failure = report.exception_line  # type: ignore[method-assign, assignment]


def pytest_collection_finish(session: pytest.Session) -> None:
    """In a student's own run, what the imports left alive is not walked again by every full garbage
    collection (:mod:`autograder.pytest_plugin.garbage`)."""
    course_session = session_of(session.config)
    if course_session is not None and not course_session.settings.grading:
        garbage.set_aside_what_is_alive(session.config)
    if course_session is not None and session.config.getoption("submission") and course_session.settings.grading:
        # A grading process starts JAX's backend before any student code is imported: a backend that cannot
        # start here (an XLA flag, a memory limit) is the grader's failure, never the student's
        # (autograder.grading.preflight.fault_before_student).
        import jax

        jax.devices()


def pytest_unconfigure(config: pytest.Config) -> None:
    garbage.give_back(config)


def _module_under_test(request: pytest.FixtureRequest) -> tuple[CourseSession, str]:
    course_session = session_of(request.config)
    module = course_session.module_under_test(request.path) if course_session else None
    if course_session is None or module is None:
        pytest.fail(f"the {request.fixturename} fixture is only available in exercises/test_<module>.py")
    return course_session, module


@pytest.fixture(scope="module")
def student(request: pytest.FixtureRequest):
    """The module under test: the student's ``<module>.py`` (or the solution with ``--solutions``)."""
    course_session, module = _module_under_test(request)
    return course_session.student(module)


@pytest.fixture(scope="module")
def reference(request: pytest.FixtureRequest):
    """The reference oracle for the module under test: expected values come only from here."""
    course_session, module = _module_under_test(request)
    return course_session.reference(module)


def _fail_if_stub(item: pytest.Item) -> None:
    course_session = session_of(item.config)
    fn = CourseSession.function_of(item)
    if fn is not None and course_session is not None and course_session.is_stub(fn):
        raise not_started(fn.module, fn.name)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A check that cannot get past its first line fails before its fixtures are set up (a training
    scenario costs seconds): an untouched stub, or a module that cannot be imported (the import error).

    Not ``tryfirst``: a grading process imports the student's module in its own ``tryfirst`` hook, to
    report the import as such (:mod:`autograder.grading.untrusted.child`); pytest's runner sets up the fixtures
    after every plain hook of a plugin registered later, as this one is.
    """
    _fail_if_stub(item)
    fn = CourseSession.function_of(item)
    if fn is not None:
        course_session = session_of(item.config)
        assert course_session is not None  # which attributed the check to fn
        module = course_session.student(fn.module)
        if isinstance(module, Unimportable):
            raise module.error


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    """An untouched stub fails at once, without running its checks; so does a check decided from the source
    whose analysis finds something (the trusted side's message: :mod:`autograder.pytest_plugin.decided`). A check
    decided from its program and the source runs first, its analysis after it (``pytest_runtest_call``): what the
    body observes (JAX's own explanation of a retrace) is the better message."""
    _fail_if_stub(pyfuncitem)
    if decided_where(pyfuncitem) == SOURCE:
        _fail_from_source(pyfuncitem)
    return None


def _fail_from_source(item: pytest.Item) -> None:
    fn = CourseSession.function_of(item)
    course_session = session_of(item.config)
    if fn is None or course_session is None or source_analysis(item) is None:
        return
    try:
        source: bytes | None = course_session.student_file(fn.module).read_bytes()
    except OSError:
        source = None
    failure = failure_from_source(item, source, fn.module, fn.name)
    if failure is not None:
        raise failure


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Around each check: time what JAX spends compiling (slow checks get one line), and skip, not fail,
    a check whose every example was left unjudged by a recorded oracle (a release)."""
    from autograder.recording import recorded

    recorded.clear_misses()  # this check's misses only: the list never outgrows one check
    before = len(recorded.misses())
    timed = CourseSession.function_of(item) is not None
    with CompileClock() if timed else contextlib.nullcontext() as clock:
        try:
            result = yield
            if decided_where(item) != SOURCE:  # decided from the program and the source: the analysis after the body
                _fail_from_source(item)
            unjudged = len(recorded.misses()) - before
            if unjudged and timed:  # passed, judged on fewer of its inputs than the course generates
                item.stash[UNJUDGED_KEY] = unjudged
            return result
        except BaseException as exc:
            from hypothesis.errors import FailedHealthCheck, Unsatisfiable

            if isinstance(exc, (Unsatisfiable, FailedHealthCheck)) and len(recorded.misses()) != before:
                raise pytest.skip.Exception(f"{recorded.NOT_RECORDED}: {recorded.misses()[before]}") from None
            raise
        finally:
            if clock is not None and is_slow(clock.seconds):  # timed
                item.stash[COMPILE_SECONDS_KEY] = round(clock.seconds, 2)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.getoption("record_oracle", None) and not parallel.is_controller(session.config):
        from autograder.recording.recorded import RecordingOracle

        RecordingOracle.save_all()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A course check's report carries what the score table needs (``report.course``, see
    :meth:`CourseSession.facts_of`): the run's table is built from reports, wherever they arrive."""
    outcome = yield
    rep: pytest.TestReport = outcome.get_result()
    fn = CourseSession.function_of(item)
    if fn is None:
        return
    course_session = session_of(item.config)
    assert course_session is not None  # which attributed the check to fn
    facts = course_session.facts_of(item, rep)
    rep.course = facts  # type: ignore[attr-defined]  # the plugin's own report attributes
    if rep.skipped or (rep.when != "call" and rep.passed):
        return
    if rep.failed:
        assert call.excinfo is not None  # a failed phase raised
        exc = call.excinfo.value
        progress = course_session.progress
        hint = hints.hint_block(course_session.course, fn, progress) if progress is not None else None
        message = report.student_message(exc, fn, [course_session.student_file(fn.module)], item.fixturenames, hint)  # type: ignore[attr-defined]
        status = status_of(exc)
        if course_session.settings.full_tracebacks:
            rep.sections.append(("what the grader says", message))
        else:
            rep.longrepr = message
    else:
        message, status = "", Status.PASSED
    rep.course_status = str(status)  # type: ignore[attr-defined]  # read by pytest_report_teststatus (a plain str: it crosses xdist's wire)
    # The student's module failed before the check's fixtures (pytest_runtest_setup): the check failed,
    # it did not break (pytest would call a failed setup an error).
    rep.failed_before_fixtures = (  # type: ignore[attr-defined]
        rep.when == "setup"
        and rep.failed
        and call.excinfo is not None
        and isinstance(call.excinfo.value, SubmissionImportError)
    )
    if rep.when == "call" or rep.failed:
        correctness = item.get_closest_marker("correctness") is not None
        name = getattr(item, "originalname", item.name)
        facts["outcome"] = CheckOutcome(fn.module, fn.name, name, status, correctness, message).to_json()


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    """A stub's checks are counted as "not started": one letter each, no failure section.

    They still fail the run (the exit status counts them); the score table
    lists the functions that are not started.
    """
    if report.failed and getattr(report, "course_status", None) == Status.NOT_STARTED:
        return "not started", "n", ("NOT STARTED", {"yellow": True})
    if getattr(report, "failed_before_fixtures", False):
        return "failed", "F", "FAILED"
    return None


# the run's header and summary are hooks of their own module; found here by pytest (autograder.plugin re-exports
# this module's names)
from autograder.pytest_plugin.summary import pytest_report_header, pytest_terminal_summary  # noqa: E402,F401
