"""``pytest exercises/`` on every core: the modules are checked side by side, one file per process.

A run of several modules spends its time in JAX (tracing, compiling, running) on one core
while the others idle. When a command-line run selects two or more of the course's check
files, the plugin hands them to pytest-xdist: one worker process per core (at most
:data:`MAX_WORKERS`, never more than the modules selected), each module checked whole by
one worker (``--dist loadfile``: a module's checks share its imports and its compiled
programs). The workers' reports come back to the process the student started, which
prints the same score table, messages and hints, and records the same progress, as a
run in one process (:mod:`autograder.pytest_plugin.session` builds them from the reports).

A check whose process dies (the code crashed Python, called ``os._exit``, was killed) fails, and its
function earns nothing; xdist starts a new worker for the rest of the module
(:meth:`~autograder.pytest_plugin.session.ReportsOf.pytest_handlecrashitem`). In one process the
death of the process ends the run.

A run stays in one process

- when it selects one module (a student's usual loop: its imports are paid once);
- when the user chose: ``-n N`` / ``--dist`` (xdist's own options; ``-n 0`` is one process),
  ``-p no:xdist``;
- when the workers could not report what the user asked for: ``--pdb``, ``--trace``, ``-s``
  (a worker's prints are not shown), ``--sw``, ``--collect-only``, ``--record-oracle``
  (``autograder release`` records each profile in one process);
- in a run started in-process with plugins of its own (a grading process, the verifier, a
  notebook's check cells), and in any process started by an xdist worker (its cores are
  already in use: the kit's own tests);
- on one core.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder.core.course import Course, CourseError, load_course
from autograder.runtime import cpus

MAX_WORKERS = 4  # each worker holds JAX, the stack and its module's programs (about 0.5 GiB)


def available_cores() -> int:
    """The CPUs this process may keep busy (its cores, cut to a container's CPU quota: :mod:`autograder.runtime.cpus`)."""
    return cpus.usable()


def selected_modules(course: Course, invocation_dir: Path, paths: list[str]) -> list[str]:
    """The course modules whose check file ``paths`` select: a folder selects every check file under
    it, a file or a node id (``file::check``) its own."""
    checks = {course.checks_path(module.name).resolve(): module.name for module in course.modules}
    chosen: list[str] = []
    for arg in paths:
        path = Path(invocation_dir, str(arg).split("::")[0]).resolve()
        for check_file, module in checks.items():
            if module not in chosen and (check_file == path or path in check_file.parents):
                chosen.append(module)
    return chosen


def workers_for(early_config: pytest.Config, root: Path, paths: list[str]) -> int:
    """How many processes check this run: 1 (this one) unless it is a multi-module run that can be spread."""
    options = early_config.known_args_namespace
    if os.environ.get("PYTEST_XDIST_WORKER") or early_config.invocation_params.plugins:
        return 1
    if not early_config.pluginmanager.has_plugin("xdist"):
        return 1
    chose = (
        getattr(options, "numprocesses", None) is not None
        or getattr(options, "dist", "no") != "no"
        or getattr(options, "tx", None)
    )
    cannot = (
        options.usepdb
        or getattr(options, "trace", False)
        or options.capture == "no"
        or options.collectonly
        or getattr(options, "stepwise", False)
        or getattr(options, "stepwise_skip", False)
        or getattr(options, "record_oracle", None)
        or options.help
        or options.version
    )
    if chose or cannot:
        return 1
    try:
        course = load_course(root, verify_files=False)
    except CourseError:
        return 1  # pytest_configure says what is wrong with course.toml, in one line
    count = len(selected_modules(course, early_config.invocation_params.dir, paths))
    return max(1, min(count, available_cores(), MAX_WORKERS))


def spread_over_cores(early_config: pytest.Config, root: Path, args: list[str]) -> None:
    """Add xdist's options to ``args`` (the command line, before pytest parses it) when the run is spread."""
    workers = workers_for(early_config, root, early_config.known_args_namespace.file_or_dir or [])
    if workers > 1:
        args[:0] = ["-n", str(workers), "--dist", "loadfile"]


def is_controller(config: pytest.Config) -> bool:
    """This process hands the checks to xdist workers and collects their reports (it runs none)."""
    return config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")
