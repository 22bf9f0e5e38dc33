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
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from autograder.core.attribution import AttributionError, attribute, matches
from autograder.core.course import Course, CourseError, Module, load_course, top_level_names
from autograder.core.submission import stub_functions


@dataclass(frozen=True)
class Problem:
    where: str
    what: str
    fix: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}\n  fix: {self.fix}"


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

CONTRACT_ROW = re.compile(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)[(`]")
CONTRACT_SIGNATURE = re.compile(r"^\|\s*`([A-Za-z_][A-Za-z0-9_]*)\(([^`]*)\)`")
CONTRACT_RETURNS = re.compile(r"[Rr]eturns (?:the tuple |the pair )?`\(([^`]*)\)`")
CONTRACT_MODULE = re.compile(r"^##\s+\d+\.\s+`([A-Za-z_][A-Za-z0-9_]*)`")


def contract_path(course: Course) -> Path | None:
    """``shared/curriculum.md`` beside the course folder (or beside one of its parents), if there is one."""
    for folder in course.root.parents:
        path = folder / "shared" / "curriculum.md"
        if path.is_file():
            return path
    return None


def parse_contract(text: str) -> dict[str, list[str]]:
    """``{module: [names]}`` from the contract's ``## N. `module``` sections and their ``| function |`` tables."""
    modules: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        heading = CONTRACT_MODULE.match(line)
        if heading:
            current = modules.setdefault(heading.group(1), [])
            continue
        if line.startswith("#"):
            current = None
        row = CONTRACT_ROW.match(line)
        if row and current is not None and row.group(1) not in current:
            current.append(row.group(1))
    return modules


def _top_level_split(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def parse_contract_signatures(text: str) -> dict[str, dict[str, tuple[list[str], list[str]]]]:
    """``{module: {function: (argument names, output names)}}`` from the contract's tables: the
    arguments of ``name(args)``, the outputs of "returns `(a, b)`" (empty when not a tuple)."""
    found: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
    current = None
    for line in text.splitlines():
        heading = CONTRACT_MODULE.match(line)
        if heading:
            current = found.setdefault(heading.group(1), {})
            continue
        if line.startswith("#"):
            current = None
        row = CONTRACT_SIGNATURE.match(line)
        if row and current is not None:
            args = [a.split("=")[0].strip().lstrip("*") for a in _top_level_split(row.group(2))]
            returns = CONTRACT_RETURNS.search(line)
            outputs = _top_level_split(returns.group(1)) if returns else []
            current[row.group(1)] = ([a for a in args if a], outputs)
    return found


def contract_problems(course: Course, path: Path | None) -> Iterator[Problem]:
    if path is None:
        return
    contract = parse_contract(path.read_text(encoding="utf-8"))
    for module in course.modules:
        if module.name not in contract:
            yield Problem(
                "course.toml",
                f"module {module.name!r} is not in the contract {path}",
                f"use the module name the contract gives (one of {sorted(contract)}), or add the module to the contract",
            )
            continue
        names = contract[module.name]
        for fn in module.functions:
            if fn.name not in names:
                yield Problem(
                    "course.toml",
                    f"function {fn.qualname} is not in the contract's table of {module.name}",
                    f"use the contract's name (one of {names}), or add it to the contract",
                )
        for kind, file in (
            ("exercise", course.exercise_path(module.name)),
            ("solution", course.solution_path(module.name)),
        ):
            if not file.is_file():
                continue
            defined = top_level_names(file)
            for name in names:
                if name not in defined:
                    yield Problem(
                        _rel(course, file),
                        f"does not define {name}, which the contract lists for {module.name}",
                        f"define {name} in the {kind} file with the contract's signature",
                    )


def _rel(course: Course, path: Path) -> str:
    try:
        return str(path.relative_to(course.root))
    except ValueError:
        return str(path)


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
                _rel(course, path),
                f"{fn.name} is not a stub, so a fresh checkout is not reported 'not started'",
                "make its body only a docstring, `# TODO: ...` comments and `raise NotImplementedError`",
            )
        body = "\n".join(lines[node.lineno - 1 : node.end_lineno])
        if "# TODO" not in body:
            yield Problem(
                _rel(course, path),
                f"{fn.name} has no `# TODO` comment",
                "add `# TODO: <what to write>` above its `raise NotImplementedError`",
            )


def check_problems(course: Course, module: Module) -> Iterator[Problem]:
    path = course.checks_path(module.name)
    where = _rel(course, path)
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


# -- what the checks vary and compare -------------------------------------------


@dataclass(frozen=True)
class Gap:
    function: str  # module.function
    item: str  # an argument's name, "return", "return[i]", or "calls"
    what: str

    def action(self) -> str:
        if self.item == "calls":
            return "calls it"
        if self.item.startswith("return"):
            return f"compares its {self.item} with the reference's"
        return f"gives {self.item} several values (sizes of 1, non-divisible sizes, extremes, zero where allowed)"

    def problem(self) -> Problem:
        return Problem(
            "exercises/test_" + self.function.split(".")[0] + ".py",
            f"{self.function}: {self.what}",
            f"add a check that {self.action()} (or list it in course.toml as [[deliberate_gaps]] "
            f'function = {self.function!r}, item = {self.item!r}, reason = "...")',
        )


def deliberate_gaps(course: Course) -> dict[tuple[str, str], str]:
    """``{(module.function, item): reason}`` from course.toml's ``[[deliberate_gaps]]``."""
    import tomllib

    data = tomllib.loads((course.root / "course.toml").read_text(encoding="utf-8"))
    return {(g["function"], g["item"]): g["reason"] for g in data.get("deliberate_gaps", [])}


def coverage_gaps(
    course: Course, record: dict, contract: dict | None, modules: Iterable[str] | None = None
) -> list[Gap]:
    """Every contract argument a ``--solutions`` run (``record``, see :func:`coverage.merge`) never varied,
    every output it never compared, every graded function it never called."""
    from autograder.authoring.coverage import compared_in_source, used_in_source

    gaps = []
    for module in course.modules:
        if modules is not None and module.name not in modules:
            continue
        checks = course.checks_path(module.name)
        source = checks.read_text(encoding="utf-8") if checks.is_file() else ""
        in_source, used = compared_in_source(source), used_in_source(source)
        signatures = (contract or {}).get(module.name, {})
        for fn in module.functions:
            entry = record.get(fn.qualname)
            arguments, outputs = signatures.get(fn.name, (None, []))
            if arguments is None:  # not in the contract's tables with a signature: the solution's own
                arguments = list((entry or {}).get("args", {}))
            if entry is None or entry["calls"] == 0:
                if arguments:
                    gaps.append(
                        Gap(fn.qualname, "calls", "no check calls it with arguments of its own (no call was recorded)")
                    )
                continue
            for name in arguments:
                seen = entry["args"].get(name)
                if seen is None:
                    continue  # a keyword-only extra the reference does not take
                if len(seen) < 2:
                    kinds = ", ".join(entry["kinds"].get(name, [])) or "one value"
                    gaps.append(
                        Gap(
                            fn.qualname,
                            name,
                            f"argument {name!r} is never varied: every call gets the same value ({kinds})",
                        )
                    )
            parts = entry["outputs"]
            for part, out in sorted(parts.items()):
                if out["compared"] or (fn.name, part) in in_source or (fn.name, "return") in in_source:
                    continue
                if out.get("object") and not out["none"] and ((fn.name, part) in used or (fn.name, "return") in used):
                    continue  # an object (a manager): the check uses it, and looks at what it does
                label = part
                if part.startswith("return[") and len(outputs) == len(parts):
                    label = f"{part} ({outputs[int(part[7:-1])]})"
                what = (
                    "is None on every call and never compared with None"
                    if out["none"]
                    else "is never compared with the reference's"
                )
                gaps.append(Gap(fn.qualname, part, f"output {label} {what}"))
    return gaps


def gap_problems(
    course: Course, gaps: list[Gap], listed: dict[tuple[str, str], str]
) -> tuple[list[Problem], list[str]]:
    """The unlisted gaps as problems, and notes: listed gaps found, listed gaps no longer found."""
    problems, notes = [], []
    found = {(g.function, g.item) for g in gaps}
    for gap in gaps:
        if (gap.function, gap.item) in listed:
            notes.append(f"deliberate gap: {gap.function} {gap.item}: {listed[(gap.function, gap.item)]}")
        else:
            problems.append(gap.problem())
    for key in sorted(set(listed) - found):
        notes.append(
            f"note: course.toml lists {key[0]} {key[1]} as a deliberate gap, but the checks cover it now: remove it"
        )
    return problems, notes


def coverage_table(course: Course, record: dict, modules: Iterable[str] | None = None) -> list[str]:
    """One line per argument and output of every graded function: how many values it took (and of what
    kinds: shapes and dtypes), whether it was compared. What the checks' authors read to widen inputs."""
    lines = []
    for module in course.modules:
        if modules is not None and module.name not in modules:
            continue
        for fn in module.functions:
            entry = record.get(fn.qualname)
            if not entry or not entry["calls"]:
                lines.append(f"{fn.qualname}: no call recorded")
                continue
            lines.append(f"{fn.qualname}: {entry['calls']} call(s)")
            for name, seen in entry["args"].items():
                count = f"{len(seen)}+" if len(seen) >= 20 else str(len(seen))
                lines.append(f"  {name}: {count} value(s): {', '.join(entry['kinds'].get(name, []))}")
            for part, outcome in sorted(entry["outputs"].items()):
                lines.append(f"  {part}: {'compared' if outcome['compared'] else 'not compared by a helper'}")
    return lines


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

        from autograder.authoring.coverage import merge

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
