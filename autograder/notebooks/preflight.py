"""The nbgrader path proves its environment before it grades a submission.

``nbgrader autograde`` gives a notebook whatever its cells' outputs say: a
kernel that cannot import JAX, a course copy whose reference is wrong or a
timeout too short for the machine all end as error outputs, which nbgrader
scores 0, for every student. So the generated ``nbgrader_config.py`` puts
:class:`Preflight` in front of nbgrader's own ``Autograde.autograde_preprocessors``:
before the first submission of an assignment's notebook in an autograde run
(one ``nbgrader autograde`` command, or one autograde formgrader starts), it runs

- the source notebook (the reference, inside its solution regions), which must get full marks;
- its ``ClearSolutions`` version (the stubs, hidden tests kept: what autograde
  sees of an untouched submission), which must get nothing,

through nbgrader's own ``Execute`` preprocessor with the same configuration
(kernel, timeout, ``NBGRADER_EXECUTION``), and reads every grade cell's score
as nbgrader does (``nbgrader.utils.determine_grade``), once per autograde run
(:class:`Preflight`). On success one line
goes to nbgrader's log (``pre-flight passed in X s: ...``). Otherwise it raises
:class:`NotebookPreflightFailed` with a message naming the cells and the last lines
of their outputs; nbgrader then logs it, removes that submission's
``autograded/`` folder and saves no score (its grades stay as
``generate_assignment``/``autograde`` created them: no ``auto_score``), goes on
with the next submission, which fails the same way without running anything
again, and exits non-zero at the end.

``python -m autograder.notebooks.preflight COURSE_DIR`` runs the same proof for
every source notebook of the course with its ``nbgrader_config.py`` (the last
step of the course's ``setup.sh``): exit 0, or 1 with the message.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import glob
import logging
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearSolutions, Execute, NbGraderPreprocessor
from nbgrader.utils import determine_grade, is_grade

from autograder.core.outcomes import points_text
from autograder.runtime import stores

TAIL_LINES = 8
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# source notebook path -> its verdict, for the life of a process that proves outside an nbgrader run (the command
# line of setup.sh); an autograde run keeps its own on its exporter, under this attribute
_verdicts: dict[str, Verdict] = stores.register("notebooks.preflight.verdicts", {})
RUN_VERDICTS = "autograder_preflight_verdicts"


class NotebookPreflightFailed(Exception):
    """The course's environment cannot grade; ``str(err)`` is the instructor's message."""


@dataclass
class Verdict:
    """The pre-flight's outcome for one source notebook."""

    notebook: str
    points: float
    seconds: float
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"pre-flight passed in {self.seconds:.1f} s: the reference got full marks "
            f"({points_text(self.points, None)} points) and its stubs nothing"
        )

    def message(self) -> str:
        return (
            f"pre-flight failed for {self.notebook}: this environment cannot grade it, so no submission is "
            "graded (nothing is saved for them; fix the environment and run autograde again).\n"
            + "\n".join(self.problems)
        )


def output_text(cell) -> str:
    """What a code cell showed: its streams, results and error traceback, as plain text."""
    parts = []
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            parts.append(out.get("text", ""))
        elif kind in ("execute_result", "display_data"):
            parts.append(str(out.get("data", {}).get("text/plain", "")))
        elif kind == "error":
            parts.append("\n".join(out.get("traceback", [])) or f"{out.get('ename')}: {out.get('evalue')}")
    return _ANSI.sub("", "\n".join(parts))


def tail(text: str, n: int = TAIL_LINES) -> str:
    """The output's first two lines (a check cell's verdict) and its last ``n`` (the error), indented."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > n + 2:
        lines = [*lines[:2], "...", *lines[-n:]]
    return "\n".join(f"    | {line}" for line in lines) or "    | (no output)"


def _cell_name(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {cell.get('id', '?')}"


def grades(nb) -> list[tuple[object, float, float]]:
    """``(cell, score, max_score)`` of every grade cell, read as nbgrader reads them."""
    out = []
    for cell in nb.cells:
        if is_grade(cell):
            score, maximum = determine_grade(cell)
            out.append((cell, float(score or 0.0), float(maximum)))
    return out


def _erred(nb) -> list:
    """Code cells that are not grade cells and raised (a setup cell that could not import the kit or JAX)."""
    return [
        cell
        for cell in nb.cells
        if cell.cell_type == "code" and not is_grade(cell) and any(o.output_type == "error" for o in cell.outputs)
    ]


def reference_problems(nb) -> list[str]:
    problems = [f"  the reference's {_cell_name(cell)} raised:\n{tail(output_text(cell))}" for cell in _erred(nb)]
    for cell, score, maximum in grades(nb):
        if score != maximum:
            problems.append(
                f"  the reference got {points_text(score, None)}/{points_text(maximum, None)} in "
                f"{_cell_name(cell)}:\n{tail(output_text(cell))}"
            )
    return problems


def stub_problems(nb) -> list[str]:
    return [
        f"  the stubs got {points_text(score, None)}/{points_text(maximum, None)} in {_cell_name(cell)} "
        f"(an untouched notebook must get nothing):\n{tail(output_text(cell))}"
        for cell, score, maximum in grades(nb)
        if score != 0
    ]


@contextlib.contextmanager
def _autograde_execution():
    """``NBGRADER_EXECUTION=autograde`` while the notebooks run (the check cells then use the grading profile), as
    autograde sets it; whatever it was before comes back (inside autograde it is already set)."""
    before = os.environ.get("NBGRADER_EXECUTION")
    os.environ["NBGRADER_EXECUTION"] = "autograde"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("NBGRADER_EXECUTION", None)
        else:
            os.environ["NBGRADER_EXECUTION"] = before


def execute(nb, folder: Path, config, log) -> list[str]:
    """Run ``nb`` with nbgrader's ``Execute`` (``config``'s kernel and timeout) in a copy of ``folder`` (the
    assignment's source folder, the notebooks left out), as autograde runs a submission. Problems, if the
    kernel could not run it at all."""
    with tempfile.TemporaryDirectory(prefix="nbgrader-preflight-") as tmp:
        work = Path(tmp) / "assignment"
        shutil.copytree(folder, work, ignore=shutil.ignore_patterns("*.ipynb", ".ipynb_checkpoints"))
        try:
            with _autograde_execution():
                Execute(config=config, log=log).preprocess(nb, {"metadata": {"path": str(work)}})
        except Exception as err:  # noqa: BLE001 - a kernel that does not start or dies: the environment's failure
            return [f"  the kernel could not run the notebook: {type(err).__name__}: {_ANSI.sub('', str(err))}"]
    return []


def prove(source: Path, config, log) -> Verdict:
    """Run the source notebook ``source`` (the reference) and its stubs; the verdict."""
    import nbformat

    started = time.monotonic()
    nb = nbformat.read(str(source), as_version=4)
    points = sum(maximum for _, _, maximum in grades(nb))
    reference = copy.deepcopy(nb)
    problems = execute(reference, source.parent, config, log) or reference_problems(reference)
    if not problems:  # the stubs only tell something once the reference is graded right
        stubs, _ = ClearSolutions(config=config, log=log).preprocess(copy.deepcopy(nb), {})
        problems = execute(stubs, source.parent, config, log) or stub_problems(stubs)
    return Verdict(str(source), points, time.monotonic() - started, problems)


def verdict_for(source: Path, config, log, verdicts: dict[str, Verdict] | None = None) -> Verdict:
    """The verdict of ``source``, proven once per ``verdicts`` (a run's; by default the process's)."""
    verdicts = _verdicts if verdicts is None else verdicts
    key = str(Path(source).resolve())
    if key not in verdicts:
        log.info("pre-flight: running %s (the reference) and its stubs before the first submission", source)
        verdict = prove(Path(source), config, log)
        verdicts[key] = verdict
        if verdict.problems:
            log.error("%s", verdict.message())
        else:
            log.info("%s", verdict.line())
    return verdicts[key]


class Preflight(NbGraderPreprocessor):
    """Autograde's first preprocessor: the course's reference full marks and its stubs nothing, once per autograde
    run and source notebook, or no submission is graded (:class:`NotebookPreflightFailed`).

    nbgrader makes one exporter per run (``BaseConverter.start``) and a new instance of each preprocessor, with
    that exporter as its parent, for every notebook: the verdicts live on the exporter. So the command line proves
    once per process, and formgrader, whose server lives on, once per autograde it starts (an environment fixed
    meanwhile is seen)."""

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        folder = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"]))
        verdict = verdict_for(folder / f"{info['notebook']}.ipynb", self.config, self.log, self._run_verdicts())
        if verdict.problems:
            raise NotebookPreflightFailed(verdict.message())
        return nb, resources

    def _run_verdicts(self) -> dict[str, Verdict] | None:
        run = self.parent
        if run is None:
            return None  # outside an nbgrader run: the process's
        verdicts = getattr(run, RUN_VERDICTS, None)
        if verdicts is None:
            verdicts = {}
            setattr(run, RUN_VERDICTS, verdicts)
        return verdicts


def course_config(course_dir: Path):
    """The course's ``nbgrader_config.py`` (with its ``nbgrader_config_local.py``), loaded as nbgrader loads it
    (its environment settings take effect in this process), rooted at ``course_dir``."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course_dir)).load_config()
    config.CourseDirectory.root = str(course_dir)
    return config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.notebooks.preflight",
        description="Prove an nbgrader course's environment: every source notebook's reference gets full marks "
        "and its stubs nothing, run as `nbgrader autograde` runs them (exit 1 if not).",
    )
    parser.add_argument("course_dir", type=Path, help="the course directory (with nbgrader_config.py)")
    args = parser.parse_args(argv)
    course_dir = args.course_dir.resolve()
    log = logging.getLogger("autograder.notebooks.preflight")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("[preflight | %(levelname)s] %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    if not (course_dir / "nbgrader_config.py").is_file():
        print(f"pre-flight: {course_dir} has no nbgrader_config.py (run `autograder nbgrader` first)", file=sys.stderr)
        return 1
    config = course_config(course_dir)
    coursedir = CourseDirectory(config=config)
    pattern = os.path.join(coursedir.format_path(coursedir.source_directory, ".", "*"), "*.ipynb")
    sources = sorted(Path(path) for path in glob.glob(pattern))
    if not sources:
        print(f"pre-flight: no source notebook in {course_dir}/{coursedir.source_directory}", file=sys.stderr)
        return 1
    failed = False
    for source in sources:
        verdict = verdict_for(source, config, log)
        failed = failed or bool(verdict.problems)
    if not failed:
        print(f"pre-flight: {len(sources)} source notebook(s) proven in this environment ({sys.prefix})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
