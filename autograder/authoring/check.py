"""``autograder check-course``: every rule the kit relies on, in one command for authors.

Static rules (fast: files are parsed, nothing is imported):

- ``course.toml`` is valid and names files and functions that exist;
- the contract (``../shared/curriculum.md`` beside the course, when it exists)
  lists every module and function of ``course.toml``, and every name the
  contract gives a module is defined in its exercise and solution files;
- every function is a stub in ``exercises/`` (a ``# TODO`` and only
  ``raise NotImplementedError``, so it is reported "not started");
- every check names exactly one function (:mod:`autograder.core.attribution`);
- every function has at least one ``@pytest.mark.correctness`` check;
- every ``hidden`` check exists and is a check of its function, and no
  function hides all of its checks.

Then, unless ``--skip-references``, the references pass every check
(``pytest exercises/ --solutions --grading``), and that run records what the checks
vary and compare (:mod:`autograder.authoring.coverage`): every argument the contract names
takes several values across the checks, and every output (the return value, or each element
of a returned tuple) is compared. A gap is a problem unless ``course.toml`` lists it as
deliberate::

    [[deliberate_gaps]]
    function = "checkpointing.save_checkpoint"
    item = "return"          # an argument's name, "return" or "return[i]"
    reason = "why no check varies or compares it"

Each problem says how to fix it.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from autograder.authoring.contract import contract_path, contract_problems, parse_contract_signatures
from autograder.authoring.coverage_read import merge
from autograder.authoring.gaps import coverage_gaps, coverage_table, deliberate_gaps, gap_problems
from autograder.authoring.problems import Problem, relative
from autograder.core.attribution import AttributionError, attribute, matches
from autograder.core.course import Course, CourseError, Module, load_course
from autograder.core.submission import stub_functions

# -- the checks files, parsed ---------------------------------------------------


@dataclass(frozen=True)
class CheckDef:
    name: str
    correctness: bool


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    names = []
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        names.append(ast.unparse(target))
    return names


def check_defs(path: Path) -> list[CheckDef]:
    """The checks a ``test_<module>.py`` defines: top-level ``test_*`` functions that are not fixtures."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module_marks = _module_marks(tree)
    checks = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.name.startswith("test"):
            continue
        decorators = _decorator_names(node)
        if any(d.split(".")[-1] == "fixture" for d in decorators):
            continue
        correctness = "correctness" in module_marks or any(
            d.split(".")[-1] == "correctness" or _aliases_correctness(tree, d) for d in decorators
        )
        checks.append(CheckDef(node.name, correctness))
    return checks


def _aliases_correctness(tree: ast.Module, name: str) -> bool:
    """``correctness = pytest.mark.correctness`` at the top of the file, used as ``@correctness``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.unparse(node.value).endswith("mark.correctness")
    return False


def _module_marks(tree: ast.Module) -> str:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            return ast.unparse(node.value)
    return ""


# -- the rules ------------------------------------------------------------------


def stub_problems(course: Course, module: Module) -> Iterator[Problem]:
    path = course.exercise_path(module.name)
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    stubs = stub_functions(path)
    nodes = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    lines = source.splitlines()
    for fn in module.functions:
        node = nodes.get(fn.name)
        if node is None:
            continue  # course.toml's own check reports it
        if fn.name not in stubs:
            yield Problem(
                relative(course, path),
                f"{fn.name} is not a stub, so a fresh checkout is not reported 'not started'",
                "make its body only a docstring, `# TODO: ...` comments and `raise NotImplementedError`",
            )
        body = "\n".join(lines[node.lineno - 1 : node.end_lineno])
        if "# TODO" not in body:
            yield Problem(
                relative(course, path),
                f"{fn.name} has no `# TODO` comment",
                "add `# TODO: <what to write>` above its `raise NotImplementedError`",
            )


def check_problems(course: Course, module: Module) -> Iterator[Problem]:
    path = course.checks_path(module.name)
    where = relative(course, path)
    checks = check_defs(path)
    owners: dict[str, list[CheckDef]] = {fn.name: [] for fn in module.functions}
    for check in checks:
        try:
            owners[attribute(check.name, module.name, course).name].append(check)
        except AttributionError as err:
            what, _, fix = str(err).partition("; fix: ")
            yield Problem(where, what, fix)
    for fn in module.functions:
        if not owners[fn.name]:
            yield Problem(where, f"{fn.qualname} has no check", f"add a check named test_{fn.name}_<what it checks>")
        elif not any(c.correctness for c in owners[fn.name]):
            yield Problem(
                where,
                f"{fn.qualname} has no @pytest.mark.correctness check (its values are never confirmed by grade)",
                f"mark the check comparing {fn.name} with the reference @pytest.mark.correctness",
            )
    yield from hidden_problems(course, module, [c.name for c in checks])


def hidden_problems(course: Course, module: Module, names: Iterable[str]) -> Iterator[Problem]:
    """Every hidden check exists and belongs to its function; no function hides all of its checks."""
    names = list(names)
    for fn in module.functions:
        for hidden in fn.hidden:
            if hidden not in names:
                yield Problem(
                    "course.toml",
                    f"{fn.qualname}.hidden names {hidden!r}, which is not a check in exercises/test_{module.name}.py",
                    f"use the name of an existing check of {fn.name} (test_{fn.name}_...)",
                )
            elif not matches(hidden, fn.name):
                yield Problem(
                    "course.toml",
                    f"{fn.qualname}.hidden names {hidden!r}, a check of another function",
                    "list it under the function it checks",
                )
        own = {n for n in names if matches(n, fn.name)}
        if fn.hidden and own and set(fn.hidden) >= own:
            yield Problem(
                "course.toml",
                f"every check of {fn.qualname} is hidden; students would see none",
                "leave at least one check of the function visible",
            )


def static_problems(course: Course, modules: Iterable[str] | None = None) -> list[Problem]:
    """Every static rule, for ``modules`` (default: all)."""
    problems = list(contract_problems(course, contract_path(course)))
    for module in course.modules:
        if modules is not None and module.name not in modules:
            continue
        problems += stub_problems(course, module)
        problems += check_problems(course, module)
    return problems


def reference_problems(
    course: Course, modules: Iterable[str] | None = None, *, record: Path | None = None
) -> list[Problem]:
    """Run the checks on ``solutions/`` in the grading profile; a problem when any fails. With ``record``,
    the run also records what the checks vary and compare there (:mod:`autograder.authoring.coverage`)."""
    targets = [str(course.checks_path(m)) for m in modules] if modules else [str(course.root / "exercises")]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH")]))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *targets,
        "--solutions",
        "--grading",
        "-q",
        "-p",
        "no:cacheprovider",
        "--tb=line",
    ]
    if record is not None:
        cmd += ["-p", "autograder.authoring.coverage", "--coverage-record", str(record)]
    proc = subprocess.run(cmd, cwd=course.root, env=env, capture_output=True, text=True)
    if proc.returncode == 0:
        return []
    tail = "\n".join(proc.stdout.strip().splitlines()[-25:])
    return [
        Problem(
            "solutions/",
            f"the references do not pass every check (pytest exit {proc.returncode}):\n{tail}",
            f"run `{' '.join(['pytest', *(Path(t).relative_to(course.root).as_posix() for t in targets), '--solutions', '--grading'])}` "
            "and fix the reference or the check",
        )
    ]


def check_course(
    root: Path, modules: list[str] | None = None, *, references: bool = True, out=None, table: bool = False
) -> int:
    """Print every problem (each with its fix) and a summary; the exit status is 1 when there is any."""
    out = out or sys.stdout
    try:
        course = load_course(root)
    except CourseError as err:
        print(f"error: {err}\n  fix: correct course.toml, or the file it names", file=out)
        return 1
    unknown = [m for m in modules or () if m not in {mod.name for mod in course.modules}]
    if unknown:
        print(
            f"error: course.toml has no module {unknown}\n  fix: use one of {[m.name for m in course.modules]}",
            file=out,
        )
        return 1
    problems = static_problems(course, modules)
    ran = ["contract", "static rules"] if contract_path(course) else ["static rules (no shared/curriculum.md found)"]
    notes: list[str] = []
    if references and not problems:  # a static problem usually breaks the run of the references too
        import tempfile

        with tempfile.TemporaryDirectory(prefix="check-course-") as tmp:
            record = Path(tmp) / "coverage"
            problems += reference_problems(course, modules, record=record)
            ran.append("references")
            if not problems:
                path = contract_path(course)
                contract = parse_contract_signatures(path.read_text(encoding="utf-8")) if path else None
                recorded = merge(record)
                if table:
                    notes += coverage_table(course, recorded, modules)
                gaps = coverage_gaps(course, recorded, contract, modules)
                listed = deliberate_gaps(course)
                if modules is not None:
                    listed = {k: v for k, v in listed.items() if k[0].split(".")[0] in modules}
                found, gap_notes = gap_problems(course, gaps, listed)
                notes += gap_notes
                problems += found
                ran.append(f"coverage of arguments and outputs ({len(gaps)} gap(s), {len(gaps) - len(found)} listed)")
    elif references:
        ran.append("references not run")
    for note in notes:
        print(note, file=out)
    for problem in problems:
        print(f"error: {problem}", file=out)
    checked = ", ".join(ran)
    scope = ", ".join(modules) if modules else f"{len(course.modules)} modules"
    print(f"check-course: {len(problems)} problem(s) in {scope} ({checked})", file=out)
    return 1 if problems else 0
