"""A fixture class of submission folders, built from ``course.toml`` and the references.

Every variant is generic: it takes the reference of any module and breaks
chosen functions by *position* (``fns[0]``, ``fns[1]``, ...), with bodies that
work whatever the function's signature (``*args, **kwargs``). Adding a module
to the course needs no change here.

``build_class(dest, module, out=..., course=...)`` writes the folders and
returns the expectations: ``{student: {function: (full marks?, message regex)}}``.
"""

from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path

from support import ROOT, reference_source

from autograder.core.course import load_course

FULL, ZERO = "full", "zero"
# right values, but the module needs review (issue 42's screen: os._exit, sys, ctypes): what the trusted side confirms
# is kept, the checks witnessed in the grading process earn nothing
WITHHELD = "withheld"


def _drop(source: str, names: set[str]) -> str:
    lines = source.splitlines()
    drop: set[int] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            drop.update(range(first - 1, node.end_lineno))
    return "\n".join(line for i, line in enumerate(lines) if i not in drop) + "\n"


def replace(source: str, bodies: dict[str, str]) -> str:
    """``source`` with each named top-level function replaced by ``def name(*args, **kwargs): body``."""
    out = _drop(source, set(bodies))
    for name, body in bodies.items():
        if body is None:
            continue
        out += f"\n\ndef {name}(*args, **kwargs):\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"
    return out


def wrap(source: str, name: str, before: str) -> str:
    """The reference's ``name`` still computes the result, after running ``before``."""
    return source + textwrap.dedent(
        f"""

        _reference_{name} = {name}


        def {name}(*args, **kwargs):
        {textwrap.indent(textwrap.dedent(before).strip(), "    ")}
            return _reference_{name}(*args, **kwargs)
        """
    )


LOOP = "while True:\n    pass"
OS_EXIT = "import os\nos._exit(7)"
SYS_EXIT = "import sys\nsys.exit(5)"
SEGFAULT = "import ctypes\nctypes.string_at(0)"
RAISES = "raise ZeroDivisionError('boom')"
MEMORY = "hog = bytearray(64 * 2**30)\nreturn hog"
WRONG = "return args[0] if args else None"

PATCHES = """
import numpy, numpy.testing
numpy.allclose = lambda *a, **k: True
numpy.array_equal = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None
numpy.testing.assert_array_equal = lambda *a, **k: None
_noop = lambda *a, **k: None
try:
    import autograder.checks.values, autograder.checks.structure, autograder.checks.purity, autograder.checks.tracing, autograder.checks.keys
    for _m in (autograder.checks.values, autograder.checks.structure, autograder.checks.purity, autograder.checks.tracing, autograder.checks.keys):
        for _n in dir(_m):
            _f = getattr(_m, _n)
            if _n.startswith("assert_") and hasattr(_f, "__code__") and not _f.__code__.co_freevars:
                _f.__code__ = _noop.__code__
except Exception:
    pass
try:
    import _pytest.reports
    _pytest.reports.BaseReport.failed = property(lambda self: False)
    _pytest.reports.BaseReport.passed = property(lambda self: True)
except Exception:
    pass
"""

ALWAYS_EQUAL = """
class _AlwaysEqual:
    shape = ()
    dtype = "float32"
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __lt__(self, other): return False
    def __gt__(self, other): return False
    def __bool__(self): return True
    def __array__(self, *args, **kwargs):
        import numpy
        return numpy.zeros(())
    def __getattr__(self, name): return self
    def __call__(self, *args, **kwargs): return self
"""

FAKE_SCORE = """
import json as _json, os as _os
print("total: 10/10   all checks passed   score: 100")
for _check in ("set_diagonal", "matches_reference"):
    print(_json.dumps({"event": "end", "check": _check, "outcome": "passed", "score": 100}))
for _fd in range(3, 64):
    try:
        _os.write(_fd, b'{"event": "end", "outcome": "passed", "check": "x"}\\n{"event": "done"}\\n')
    except OSError:
        pass
"""

READ_REFERENCE = """
try:
    from solutions.{module} import *  # noqa
except ImportError:
    import pathlib
    for _p in ("../course/solutions/{module}.py", "../solutions/{module}.py", "solutions/{module}.py"):
        try:
            exec(pathlib.Path(_p).read_text())
            break
        except OSError:
            pass
"""

WRITES_FILES = (
    """
import pathlib
_fake = '{{"score": 1000, "tests": []}}'
_passing = "def test_{fn}_passes():\\n    pass\\n"
for _path, _text in [
    ("{out}/{student}/results.json", _fake),
    ("{out}/grades.csv", "student,score\\n{student},1000\\n"),
    ("{course}/exercises/test_{module}.py", _passing),
    ("{course}/solutions/{module}.py", open(__file__).read()),
    ("../course/exercises/test_{module}.py", _passing),
    ]:
    try:
        pathlib.Path(_path).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(_path).write_text(_text)
    except OSError:
        pass
"""
    + """{writes_kit}"""
)

# Rewrites the kit and the checks this grading process runs (their real files: ``<kit>/autograder/checks/*.py``
# and ``<course>/exercises/test_*.py`` next to it), so that every later process importing them would stop: in the
# sandbox they are read-only, shared by the class.
WRITES_KIT = """
try:
    import pathlib as _pathlib
    import autograder.checks.values as _values
    _kit_file = _pathlib.Path(_values.__file__)
    for _path in (*_kit_file.parent.glob("*.py"), *(_kit_file.parents[3] / "course" / "exercises").glob("test_*.py")):
        try:
            _path.write_text("raise SystemExit('rewritten by a student')\\n")
        except OSError:
            pass
except Exception:
    pass
"""

# Finds the grading process's reporter through gc and rewrites what it reports: every check "passed"
# (issue 32: a jit-breaking replace_negatives went from 2/3 to 3/3). Tripwires on the reporter's state
# make the whole module earn nothing.
FORGES_REPORTS = """
import gc as _gc


def _passed(_emit):
    def emit(**event):
        if event.get("event") == "end":
            event["outcome"], event["message"] = "passed", ""
        if event.get("event") != "tampered":
            _emit(**event)
    return emit


for _obj in _gc.get_objects():
    if type(_obj).__name__ == "ChildReporter":
        _obj.emit = _passed(_obj.emit)
        for _name in ("report_tampering", "forged", "send"):  # whatever reports the forgery, silenced
            setattr(_obj, _name, lambda *a, **k: False)
"""

# The same through the session's list of outcomes the reporter reads: failures read as passes.
FORGES_OUTCOMES = """
import gc as _gc


class _AllPassed(list):
    def __getitem__(self, index):
        got = list.__getitem__(self, index)
        return [_o.__class__(**{**vars(_o), "status": type(_o.status)("passed"), "message": ""}) for _o in got] if isinstance(index, slice) else got


for _obj in _gc.get_objects():
    if type(_obj).__name__ == "CourseSession" and isinstance(getattr(_obj, "outcomes", None), list):
        _obj.outcomes = _AllPassed(_obj.outcomes)
"""


def build_class(dest: Path, module: str, *, out: Path, course: Path) -> dict[str, dict[str, tuple[str, str]]]:
    """Write the fixture class into ``dest``; returns the expected result per student and function."""
    fns = [f.name for f in load_course(ROOT).module(module).functions]
    assert len(fns) >= 4, "the fixture class breaks four functions by position"
    ref = reference_source(module)
    everyone_ok = {fn: (FULL, "") for fn in fns}
    expected: dict[str, dict[str, tuple[str, str]]] = {}
    sources: dict[str, str] = {}

    def add(student: str, source: str, expect: dict[str, tuple[str, str]]) -> None:
        sources[student] = source
        expected[student] = {**everyone_ok, **expect}

    add("correct", ref, {})
    add("correct_printing", wrap(ref, fns[1], "print('x' * 300_000)") + "\nprint('y' * 5_000_000)\n", {})
    n_lines = len(ref.splitlines())
    add(
        "syntax_error",
        ref + "\ndef broken(:\n    pass\n",
        {fn: (ZERO, rf"could not be imported: SyntaxError line {n_lines + 2}") for fn in fns},
    )
    add(
        "bad_import",
        ref + "\nimport no_such_module_for_grading\n",
        {fn: (ZERO, rf"could not be imported: ModuleNotFoundError line {n_lines + 2}") for fn in fns},
    )
    add(
        "exit_at_import",
        ref + "\nimport sys\nsys.exit(3)\n",
        {fn: (ZERO, r"could not be imported: SystemExit") for fn in fns},
    )
    add(
        "os_exit_at_import",
        ref + "\nimport os\nos._exit(3)\n",
        {
            fn: (
                ZERO,
                rf"could not be imported: importing {module}\.py stopped the grader \(the process exited with code 3",
            )
            for fn in fns
        },
    )
    add(
        "hang_at_import",
        ref + "\nwhile True:\n    pass\n",
        {fn: (ZERO, rf"could not be imported: importing {module}\.py did not finish within") for fn in fns},
    )
    add(
        "faults_a",
        replace(ref, {fns[0]: LOOP, fns[1]: OS_EXIT, fns[3]: None}),
        {
            fns[2]: (WITHHELD, r"needs review: uses os\._exit"),
            fns[0]: (ZERO, rf"{module}\.{fns[0]}: timed out after \d+ s"),
            fns[1]: (ZERO, rf"{module}\.{fns[1]}: the grading process stopped .*exited with code 7"),
            fns[3]: (ZERO, rf"{module}\.py does not define {fns[3]}"),
        },
    )
    add(
        "faults_b",
        replace(ref, {fns[0]: SEGFAULT, fns[2]: SYS_EXIT, fns[3]: RAISES}),
        {
            fns[1]: (WITHHELD, r"needs review: imports ctypes"),
            fns[0]: (
                ZERO,
                rf"{module}\.{fns[0]}: the grading process stopped .*crashed the Python interpreter \(SIGSEGV\)",
            ),
            fns[2]: (ZERO, rf"{module}\.{fns[2]} raised SystemExit"),
            fns[3]: (ZERO, rf"{module}\.{fns[3]} raised ZeroDivisionError: boom"),
        },
    )
    add("faults_memory", replace(ref, {fns[2]: MEMORY}), {fns[2]: (ZERO, rf"{module}\.{fns[2]} raised MemoryError")})
    # Hostile submissions: every function is wrong, and each tries to get points anyway.
    wrong_everywhere = {fn: WRONG for fn in fns}
    zero = {fn: (ZERO, "") for fn in fns}
    add("wrong_values", replace(ref, wrong_everywhere), zero)
    add("hostile_reads_reference", replace(ref, wrong_everywhere) + READ_REFERENCE.format(module=module), zero)
    add(
        "hostile_imports_reference",
        f"from solutions.{module} import *  # noqa\n",
        {fn: (ZERO, r"could not be imported: ModuleNotFoundError line 1: No module named 'solutions'") for fn in fns},
    )
    add("hostile_patches", replace(ref, wrong_everywhere) + PATCHES, zero)
    add("hostile_always_equal", replace(ref, {fn: "return _AlwaysEqual()" for fn in fns}) + ALWAYS_EQUAL, zero)
    add("hostile_fake_score", replace(ref, wrong_everywhere) + FAKE_SCORE, zero)
    tampered = {fn: (ZERO, r"tampering detected") for fn in fns}
    # Right values, a forged report: the forgery alone costs the module (with its reference, old graders gave full marks).
    add("hostile_forges_reports", ref + FORGES_REPORTS, tampered)
    add("hostile_forges_outcomes", ref + FORGES_OUTCOMES, tampered)
    if module == "at_updates":  # issue 32's case: right values, boolean indexing (fails under jit), a forged report
        jit_breaking = "import numpy as _np\ny = _np.array(args[0])\ny[y < 0] = args[1]\nreturn jnp.asarray(y)"
        add("hostile_forges_jit", replace(ref, {"replace_negatives": jit_breaking}) + FORGES_REPORTS, tampered)
    add(
        "hostile_writes_files",
        replace(ref, wrong_everywhere)
        + WRITES_FILES.format(
            out=out, student="hostile_writes_files", course=course, module=module, fn=fns[0], writes_kit=WRITES_KIT
        ),
        zero,
    )
    for student, source in sources.items():
        folder = dest / student
        folder.mkdir(parents=True)
        (folder / f"{module}.py").write_text(source, encoding="utf-8")
    # The folder-with-exercises layout, with files that must be ignored.
    folder = dest / "junk_in_exercises"
    (folder / "exercises").mkdir(parents=True)
    (folder / "exercises" / f"{module}.py").write_text(replace(ref, wrong_everywhere), encoding="utf-8")
    (folder / "exercises" / f"test_{module}.py").write_text(f"def test_{fns[0]}():\n    pass\n")
    (folder / "exercises" / "conftest.py").write_text(
        "import pytest\n\n@pytest.hookimpl(wrapper=True)\ndef pytest_runtest_makereport(item, call):\n    rep = yield\n    rep.outcome = 'passed'\n    return rep\n"
    )
    (folder / "conftest.py").write_text((folder / "exercises" / "conftest.py").read_text())
    (folder / "solutions").mkdir()
    (folder / "solutions" / f"{module}.py").write_text(replace(ref, wrong_everywhere))
    (folder / "course.toml").write_text("format = 1\n")
    expected["junk_in_exercises"] = zero
    # ... and the same layout with a correct file: only the module file counts.
    folder = dest / "exercises_layout"
    (folder / "exercises").mkdir(parents=True)
    (folder / "exercises" / f"{module}.py").write_text(ref, encoding="utf-8")
    (folder / "notes.txt").write_text("ignored")
    expected["exercises_layout"] = everyone_ok
    # A folder without the module at all still gets a row.
    (dest / "empty").mkdir()
    expected["empty"] = {fn: (ZERO, rf"{module}\.py is missing from your submission") for fn in fns}
    return expected


# Students who look for the expected values instead of computing them (issue 11, part 3). Each
# defines every function of the module as a thief of ``name`` that falls back to a wrong answer.

STEAL_FROM_SYS_MODULES = """
import sys as _sys


def _find(name):
    for _module in list(_sys.modules.values()):
        if getattr(_module, "__name__", "").startswith("_course_reference_.") and hasattr(_module, name):
            return getattr(_module, name)
    return None
"""

STEAL_FROM_GC = """
import gc as _gc
import types as _types


def _find(name):
    for _obj in _gc.get_objects():
        if isinstance(_obj, _types.FunctionType) and _obj.__name__ == name and "_course_reference_" in (_obj.__module__ or ""):
            return _obj
    return None
"""

# Both routes to the reference in memory, one after the other (one student tries them all).
STEAL_FROM_MEMORY = (
    STEAL_FROM_SYS_MODULES.replace("def _find(", "def _find_in_sys_modules(")
    + STEAL_FROM_GC.replace("def _find(", "def _find_in_gc(")
    + """

def _find(name):
    return _find_in_sys_modules(name) or _find_in_gc(name)
"""
)

STEAL_FROM_FILES = """
import pathlib as _pathlib


def _find(name):
    for _folder in [_pathlib.Path.cwd(), *_pathlib.Path(__file__).resolve().parents]:
        for _path in list(_folder.glob("solutions/*.py")) + list(_folder.glob("*/solutions/*.py")):
            _scope = {}
            try:
                exec(_path.read_text(), _scope)
            except Exception:
                continue
            if name in _scope:
                return _scope[name]
    return None
"""

# Looks the inputs up in a release's recorded oracle (it knows the digest's recipe: the kit is
# public). Under jit it answers through a callback, trying the argument types the checks use.
STEAL_FROM_RELEASE = """
import itertools as _itertools
import pathlib as _pathlib

import jax as _jax
import numpy as _np

from autograder.recording.recorded import NotRecorded as _NotRecorded, RecordedFunction as _Function, RecordedOracle as _Oracle

# The release's oracle travels inside the submission (a student has the release; the grader shows a grading
# process nothing but the student's own module files): unpacked into the process's own temporary folder.
_BLOB = {blob!r}


def _unpack():
    import base64 as _b64, io as _io, tarfile as _tar, tempfile as _tmp
    where = _pathlib.Path(_tmp.mkdtemp())
    with _tar.open(fileobj=_io.BytesIO(_b64.b64decode(_BLOB)), mode="r:xz") as packed:
        packed.extractall(where)
    return where / "oracle"


_ORACLE = _Oracle(_unpack(), {module!r})


def _forms(value):
    if isinstance(value, _jax.Array) and _jax.dtypes.issubdtype(value.dtype, _jax.dtypes.prng_key):
        return [value]
    try:
        if _np.ndim(value) == 0 and not isinstance(value, _jax.Array):
            return [value]
        if _np.ndim(value) == 0:
            return [float(value), int(value), jnp.asarray(value), value]
        return [jnp.asarray(value), _np.asarray(value)]
    except (TypeError, ValueError):  # a state, a model, a batch: looked up as given
        return [value]


def _answer(name, args):
    for candidate in _itertools.product(*[_forms(a) for a in args]):
        try:
            return _Function(_ORACLE, name).lookup(tuple(candidate), {{}})
        except _NotRecorded:
            continue
    raise _NotRecorded(name)


def _find(name):
    def stolen(*args):
        if any(isinstance(a, _jax.core.Tracer) for a in args):
            shape = _jax.ShapeDtypeStruct(args[0].shape, args[0].dtype)
            return _jax.pure_callback(lambda *a: _np.asarray(_answer(name, a), shape.dtype), shape, *args)
        return _answer(name, args)
    return stolen
"""

# Looks the inputs up in the givens of a module judged on the trusted side only: what its fixtures built
# with the reference, which grade's trusted side recorded and put next to the grading process
# (autograder.recording.givens). They hold no answer to a judged input, so it finds nothing to copy.
STEAL_FROM_GIVENS = STEAL_FROM_RELEASE.replace("_BLOB = {blob!r}", "_BLOB = None").replace(
    "_ORACLE = _Oracle(_unpack(), {module!r})",
    """def _givens_folder():
    for _folder in [_pathlib.Path.cwd(), *_pathlib.Path.cwd().parents]:
        for _index in _folder.glob("givens/{module}.json"):
            return _index.parent
    raise FileNotFoundError("no givens")


_ORACLE = _Oracle(_givens_folder(), {module!r})""",
)

THIEF = """

def {name}(*args, **kwargs):
    try:
        stolen = _find({name!r})
        if stolen is not None:
            return stolen(*args, **kwargs)
    except Exception:
        pass
    return args[0] if args else None
"""


# A thief keeps what it found (scanning gc or the disk on every call would only make it slow), and
# while it has found nothing, looks again whenever a module was imported since its last look (a
# reference the grader loads after the student's import comes with an import: scanning again in
# between would find nothing new, and only runs the checks into their time limit).
REMEMBER = """
import sys as _sys_now

_found = {}
_looked = {}


def _remember(find):
    def remembered(name):
        if name not in _found:
            loaded = len(_sys_now.modules)
            if _looked.get(name) == loaded:
                return None
            _looked[name] = loaded
            hit = find(name)
            if hit is None:
                return None
            _found[name] = hit
        return _found[name]
    return remembered
"""


def thief_source(module: str, finder: str) -> str:
    """A ``module`` whose every function answers with what ``finder``'s ``_find(name)`` finds (remembered,
    see :data:`REMEMBER`), else returns its first argument."""
    fns = [f.name for f in load_course(ROOT).module(module).functions]
    finder = textwrap.dedent(finder).replace("\ndef _find(name):", "\n@_remember\ndef _find(name):")
    return "import jax.numpy as jnp\n" + REMEMBER + finder + "".join(THIEF.format(name=fn) for fn in fns)


def packed_folder(folder: Path) -> str:
    """``folder`` as base64 of an xz tar (named ``oracle`` inside): data a submission can carry in its source."""
    import base64
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz") as packed:
        packed.add(folder, arcname="oracle")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def build_thieves(dest: Path, module: str, *, release_oracle: Path) -> dict[str, str]:
    """A correct student and one thief per route; returns ``{student: route}`` (``None`` for the correct one)."""
    ref = reference_source(module)
    routes = {
        "steals_from_sys_modules": STEAL_FROM_SYS_MODULES,
        "steals_from_gc": STEAL_FROM_GC,
        "steals_from_files": STEAL_FROM_FILES,
        "steals_from_release_oracle": STEAL_FROM_RELEASE.format(blob=packed_folder(release_oracle), module=module),
    }
    students = {"correct": ref}
    for student, finder in routes.items():
        students[student] = thief_source(module, finder)
    for student, source in students.items():
        (dest / student).mkdir(parents=True)
        (dest / student / f"{module}.py").write_text(source, encoding="utf-8")
    return {s: (None if s == "correct" else s) for s in students}


# Tampering with the grader from one module's file (issue 10, isolation). Each variant's
# functions are all wrong, and the file changes the grader so that they would pass.
TAMPERING = {
    "tamper_pytest_outcome": """
import _pytest.reports
_pytest.reports.BaseReport.failed = property(lambda self: False)
_pytest.reports.BaseReport.passed = property(lambda self: True)
""",
    "tamper_replaces_check": """
import autograder.checks.values
autograder.checks.values.assert_matches_reference = lambda *args, **kwargs: None
""",
    "tamper_rewrites_check_code": """
import autograder.checks.values
for _name in dir(autograder.checks.values):
    _f = getattr(autograder.checks.values, _name)
    if _name.startswith("assert_") and hasattr(_f, "__code__") and not _f.__code__.co_freevars:
        _f.__code__ = (lambda *args, **kwargs: None).__code__
""",
    "tamper_hypothesis_given": """
import hypothesis, hypothesis.core
def _given(*strategies, **kw_strategies):
    return lambda test: test
hypothesis.given = hypothesis.core.given = _given
hypothesis.core.StateForActualGivenExecution.execute_once = lambda self, *args, **kwargs: None
""",
    "tamper_numpy_testing": """
import numpy, numpy.testing
numpy.testing.assert_allclose = lambda *args, **kwargs: None
numpy.testing.assert_array_equal = lambda *args, **kwargs: None
numpy.allclose = lambda *args, **kwargs: True
numpy.array_equal = lambda *args, **kwargs: True
""",
}
# ... and one that waits until the grader calls it, then patches the checks.
TAMPER_WHILE_RUNNING = """
import autograder.checks.values
autograder.checks.values.assert_matches_reference = lambda *args, **kwargs: None
"""


def build_tamper_class(dest: Path, module: str, other: str) -> dict[str, dict[str, tuple[str, str]]]:
    """Students whose ``module`` tampers with the grader while their ``other`` module is the reference.

    Returns ``{student: {"<module>.<function>": (FULL or ZERO, message regex)}}``: the other module
    keeps full marks, the tampering one earns nothing and its results say tampering was detected.
    """
    course = load_course(ROOT)
    fns = [f.name for f in course.module(module).functions]
    wrong = replace(reference_source(module), {fn: WRONG for fn in fns})
    sources = {student: wrong + code for student, code in TAMPERING.items()}
    sources["tamper_while_running"] = replace(
        reference_source(module), {fns[0]: TAMPER_WHILE_RUNNING + "\n" + WRONG, **{fn: WRONG for fn in fns[1:]}}
    )
    detected = rf"tampering detected: importing or running {module}\.py changed the grader's own code"
    expected = {}
    for student, source in sources.items():
        folder = dest / student
        folder.mkdir(parents=True)
        (folder / f"{module}.py").write_text(source, encoding="utf-8")
        (folder / f"{other}.py").write_text(reference_source(other), encoding="utf-8")
        expected[student] = {
            **{f"{module}.{fn}": (ZERO, detected) for fn in fns},
            **{fn.qualname: (FULL, "") for fn in course.module(other).functions},
        }
    # Issue 41, door 1: stops its zygote when its first module is imported, and crashes nowhere: its other module,
    # which needs a process from that zygote (or already has one), is graded in a fresh sandbox, in full; the
    # class goes on (grade stopped with the grader's error before).
    folder = dest / "stops_its_zygote_in_one_module"
    folder.mkdir(parents=True)
    (folder / f"{module}.py").write_text(reference_source(module) + STOPS_PARENT, encoding="utf-8")
    (folder / f"{other}.py").write_text(reference_source(other), encoding="utf-8")
    expected[folder.name] = {
        **{f"{module}.{fn}": (FULL, "") for fn in fns},
        **{fn.qualname: (FULL, "") for fn in course.module(other).functions},
    }
    return expected


# The sandbox (issue 31): students who look for the reference or a classmate outside their own files, hurt the
# classmates graded after them, or outlive their run. Each thief answers with what it finds (full marks if it
# finds the reference), else wrong: it must earn nothing. Readers fail a function when they find a classmate's
# trace (their functions are the reference): they must keep full marks.

STEAL_ANYWHERE = """
import glob as _glob
import os as _os
import tempfile as _tempfile

_COURSE = {course!r}


def _candidates():
    # the grader's and the verifier's folders through /proc (their working folders, their roots)
    yield from _glob.glob("/proc/*/cwd/solutions/{module}.py")
    yield from _glob.glob("/proc/*/cwd/../course/solutions/{module}.py")
    yield from _glob.glob("/proc/*/root" + _COURSE + "/solutions/{module}.py")
    yield from _glob.glob("/proc/*/root/tmp/autograder-*/course/solutions/{module}.py")
    # the instructor's course, where the class was collected
    yield _COURSE + "/solutions/{module}.py"
    # scratch copies of the course next to this process's own folders (the verifier's among them)
    bases = {{"/tmp", "/var/tmp", "/dev/shm", _tempfile.gettempdir(), *map(str, __import__("pathlib").Path.cwd().parents)}}
    for _base in sorted(bases):
        yield from _glob.glob(_base + "/autograder-*/course/solutions/{module}.py")
        yield from _glob.glob(_base + "/*/course/solutions/{module}.py")
        yield from _glob.glob(_base + "/*/solutions/{module}.py")
        yield from _glob.glob(_base + "/solutions/{module}.py")


def _find(name):
    for _path in _candidates():
        _scope = {{}}
        try:
            with open(_path) as _f:
                exec(_f.read(), _scope)
        except Exception:
            continue
        if name in _scope:
            return _scope[name]
    return None
"""

# SIGSTOPs the process that forked it (the grading zygote) when imported.
STOPS_PARENT = """
import os as _os
import signal as _signal
try:
    _os.kill(_os.getppid(), _signal.SIGSTOP)
except OSError:
    pass
"""

# A double-forked process in a session of its own, meant to outlive the run: it copies every Python file it can
# read (classmates' submissions, scratch folders, through /proc) into {leak}, every half second, for 5 minutes.
# Its command line carries {marker}, so the test can tell whether it still runs.
OUTLIVES_RUN = """
import os as _os
import sys as _sys

_SNOOP = '''
import glob, os, pathlib, shutil, time
end = time.time() + 300
bases = {{"/tmp", *(str(p) for p in pathlib.Path.cwd().parents if str(p) != "/")}}
os.chdir("/")  # its folder may be removed under it
while time.time() < end:
    try:
        os.makedirs({leak!r}, exist_ok=True)
        found = glob.glob("/proc/*/cwd/*.py") + glob.glob("/proc/*/cwd/../submission/*.py")
        for base in bases:
            for depth in ("/*", "/*/*", "/*/*/*"):
                found += glob.glob(base + depth + ".py")
        for p in found:
            try:
                shutil.copy(p, os.path.join({leak!r}, p.replace("/", "_")))
            except Exception:
                pass
    except Exception:
        pass
    time.sleep(0.5)
# {marker}
'''
if _os.fork() == 0:
    try:
        _os.setsid()
        if _os.fork() == 0:
            _os.execv(_sys.executable, [_sys.executable, "-c", _SNOOP])
    finally:
        _os._exit(0)
"""

# Leaves a mark wherever a later student's process might look.
LEAVES_MARKS_EVERYWHERE = """
import os as _os
import pathlib as _pathlib
import tempfile as _tempfile

for _folder in {{"/tmp", "/var/tmp", "/dev/shm", _tempfile.gettempdir(), _os.environ.get("HOME") or "/tmp",
                *map(str, _pathlib.Path.cwd().parents)}}:
    try:
        with open(_os.path.join(_folder, "MARK-{student}"), "w") as _f:
            _f.write("{student} was here")
    except OSError:
        pass
"""

# Fails (raises) when it finds a classmate's mark, a classmate's private file or another student's folder. It looks
# once, at import (a run-once cache in a module-level list would be module state, which its grade would lose).
LOOKS_FOR_CLASSMATES = """
import glob as _glob
import os as _os
import pathlib as _pathlib
import tempfile as _tempfile


def _find_classmates():
    places = {{"/tmp", "/var/tmp", "/dev/shm", _tempfile.gettempdir(), _os.environ.get("HOME") or "/tmp",
              *map(str, _pathlib.Path.cwd().parents)}}
    for _folder in places:
        if _os.path.isdir(_folder) and any(n.startswith("MARK-") for n in _os.listdir(_folder)):
            return "a classmate's mark in " + _folder
    paths = _glob.glob("/proc/*/cwd/*.py") + _glob.glob("/proc/*/cwd/../*/*.py") + _glob.glob("/proc/*/cwd/../../*/*/*.py")
    for _folder in places - {{"/"}}:
        for _depth in ("/*", "/*/*", "/*/*/*"):
            paths += _glob.glob(_folder + _depth + ".py")
    for _path in paths:
        try:
            with open(_path, "rb") as _f:
                if {private!r}[::-1].encode() in _f.read():  # (reversed: this file does not hold it)
                    return "a classmate's file: " + _path
        except OSError:
            pass
    return None


_FOUND_CLASSMATE = _find_classmates()


def _look_for_classmates():
    if _FOUND_CLASSMATE is not None:
        raise RuntimeError(_FOUND_CLASSMATE)
"""

# Forks {forks} sleeping processes from a small interpreter of its own (fast), reports how many it made, then ends
# them; the student's control group allows fewer (threads included).
FORK_BOMB = """
import os, subprocess, sys, textwrap
code = '''
import os, signal, sys, time
children = []
try:
    for _ in range({forks}):
        pid = os.fork()
        if pid == 0:
            time.sleep({seconds})
            os._exit(0)
        children.append(pid)
    print("all", len(children), flush=True)
except OSError:
    print("failed", len(children), flush=True)
for pid in children:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
'''
bomb = subprocess.Popen([sys.executable, "-I", "-S", "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True)
how, count = (bomb.stdout.readline().split() + ["?", "?"])[:2]
bomb.wait()
if how == "failed":
    raise RuntimeError(f"fork failed after {{count}} processes")
raise RuntimeError(f"forked all {{count}} processes")
"""

ALLOCATES_3G = "hog = bytearray(b'x') * (3 * 2**30)\nreturn len(hog)"

# Issue 41, door 2: plants links wherever the grader (root) might open a file by name (the stderr of this run and
# of the next ones, the zygote's), to {victim} (a root-only file: its text must never be quoted) and to {created}
# (which root must never create); and tries to move its run's folder away to put a link in its place.
PLANTS_LINKS = """
import os as _os
import pathlib as _pathlib
import sys as _sys

_here = _pathlib.Path.cwd()
_names = ["stderr.txt", "zygote-stderr.txt", *(f"run-{{k}}-stderr.txt" for k in range(1, 40))]
for _base in {{_here, _here.parent, _here.parent.parent, _pathlib.Path(_os.environ.get("HOME") or "/")}}:
    for _name in _names:
        for _target in ({victim!r}, {created!r}):
            try:
                if _os.path.lexists(_base / _name):
                    _os.unlink(_base / _name)
                _os.symlink(_target, _base / _name)
            except OSError:
                pass
    for _k in range(1, 40):
        try:
            _os.symlink("/", _base / f"run-{{_k}}")
        except OSError:
            pass
try:
    _os.rename(_here.parent, _here.parent.parent / "moved")
    _os.symlink("/", _here.parent)
except OSError:
    pass
_sys.stderr.write("\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[1A")
_sys.stderr.flush()
"""

# Issue 41, door 4: lists every check file it can find (next to its module's checks, anywhere its sandbox shows):
# other modules' checks (their hidden ones among them) must not be there.
READS_OTHER_CHECKS = """
import glob, os, sys
seen = set()
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None) or ""
    if os.path.basename(f).startswith("test_") and os.path.basename(os.path.dirname(f)) == "exercises":
        seen |= {os.path.basename(p) for p in glob.glob(os.path.join(os.path.dirname(f), "test_*.py"))}
for base in ("/tmp", os.path.dirname(os.getcwd()), os.path.dirname(os.path.dirname(os.getcwd()))):
    seen |= {os.path.basename(p) for p in glob.glob(base + "/**/exercises/test_*.py", recursive=True)}
modules = set()
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None) or ""
    toml = os.path.join(os.path.dirname(os.path.dirname(f)), "course.toml")
    if os.path.basename(os.path.dirname(f)) == "exercises" and os.path.isfile(toml):
        import tomllib
        with open(toml, "rb") as t:
            modules |= {mod["name"] for mod in tomllib.load(t)["modules"]}
raise RuntimeError("checks seen: " + ",".join(sorted(seen)) + ". modules in course.toml: " + ",".join(sorted(modules)) + ".")
"""

# Issue 41, door 4 (its own module's hidden checks): every route a student's code has to the text of the checks that
# grade it (the check file by its path and by a search of its sandbox, linecache, inspect, the check module's loader,
# docstrings, /proc/self/fd and /dev/fd, a memory file's mapping); says through which routes the body of a hidden check
# (``def <hidden check>`` and what follows, their names read from course.toml) came back, and how much each gave.
READS_OWN_HIDDEN_CHECKS = """
import glob, inspect, linecache, os, stat, sys, tomllib
texts = []
def keep(route, text):
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text:
        texts.append((route, text))
checks = [m for m in list(sys.modules.values()) if os.path.basename(getattr(m, "__file__", None) or "").startswith("test_")
          and os.path.basename(os.path.dirname(m.__file__)) == "exercises"]
hidden = set()
for m in checks:
    f = m.__file__
    try:
        with open(os.path.join(os.path.dirname(os.path.dirname(f)), "course.toml"), "rb") as t:
            hidden |= {h for mod in tomllib.load(t)["modules"] for fn in mod["functions"] for h in fn.get("hidden", [])}
    except Exception:
        pass
    for route, read in (("open", lambda: open(f).read()), ("linecache", lambda: "".join(linecache.getlines(f))),
                        ("inspect module", lambda: inspect.getsource(m)),
                        ("loader", lambda: m.__loader__.get_source(m.__name__))):
        try:
            keep(route, read())
        except Exception:
            pass
    for name in dir(m):
        fn = getattr(m, name)
        for route, obj in (("inspect " + name, fn), ("inspect inner " + name, getattr(getattr(fn, "hypothesis", None), "inner_test", None))):
            try:
                keep(route, inspect.getsource(obj))
            except Exception:
                pass
        keep("doc " + name, getattr(fn, "__doc__", None) if callable(fn) else None)
for key, entry in list(linecache.cache.items()):
    keep("linecache.cache " + str(key), "".join(entry[2]) if len(entry) > 2 else "")
here = os.getcwd()
for base in {here, os.path.dirname(here), os.path.dirname(os.path.dirname(here)), "/tmp", os.environ.get("HOME") or "/"}:
    for path in glob.glob(base + "/**/test_*.py", recursive=True):
        try:
            keep("glob " + path, open(path).read())
        except Exception:
            pass
for folder in ("/proc/self/fd", "/dev/fd", "/proc/self/map_files"):
    try:
        names = os.listdir(folder)
    except OSError:
        continue
    for n in names:
        path = os.path.join(folder, n)
        try:
            target = os.readlink(path)
        except OSError:
            target = ""
        if folder.endswith("map_files") and "memfd" not in target and "test_" not in target:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                keep(path + " (" + target + ")", os.pread(fd, 1 << 20, 0))
        except OSError:
            pass
        finally:
            os.close(fd)
try:  # the zygote that forked this process (not dumpable: its descriptors are no other process's to list)
    zygote = "listed " + str(len(os.listdir("/proc/" + str(os.getppid()) + "/fd")))
except OSError:
    zygote = "refused"
hits = sorted({route for route, text in texts for h in hidden if "def " + h + "(" in text})
sizes = ", ".join(route + ": " + str(len(text)) for route, text in texts if not route.startswith("doc ") or "def " in text)
raise RuntimeError("hidden checks " + ",".join(sorted(hidden)) + " found through: " + (", ".join(hits) or "nothing")
                   + ". the zygote's descriptors: " + zygote + ". read: " + sizes[:1500])
"""
# ... the residual: the hidden checks' code objects (their names and constants), through __code__: flagged for review.
READS_HIDDEN_CODE = """
import sys
names = set()
for m in list(sys.modules.values()):
    if (getattr(m, "__file__", None) or "").endswith("test_" + __name__ + ".py"):
        for value in vars(m).values():
            inner = getattr(getattr(value, "hypothesis", None), "inner_test", None)
            if inner is not None:
                names |= set(inner.__code__.co_names)
raise RuntimeError("code names: " + ",".join(sorted(names)))
"""
# ... a line of a hidden check the student had (a classmate's copy, an earlier leak), sent back through its failure
# message, split by a colour sequence and an invisible character: the grader withholds the message.
ECHOES_HIDDEN_LINE = """
line = {line!r}
half = len(line) // 2
raise RuntimeError("the hidden check says: " + line[:half] + "\\x1b[0m" + line[half:half + 3] + "\\u200b" + line[half + 3:])
"""


# Issue 41, captured output inside the disk quota: a correct submission that prints 300 MB (more than its 256 MB
# quota) at its first call; pytest kept a check's output in a file inside the quota ("disk quota").
PRINTS_PAST_QUOTA = """

def _print_past_quota():
    try:  # the first call in the student's folder (a marker file there, not module state its grade would lose)
        open("printed-past-quota", "x").close()
    except FileExistsError:
        return
    for _ in range(300):
        print("x" * 1_000_000)
"""
PRINTS_WITHOUT_BOUND = """
while True:
    print("y" * 1_000_000)
"""


def hidden_check_lines(module: str, root: Path = ROOT) -> list[str]:
    """The lines of ``module``'s hidden checks (stripped, longest first) that no other part of its check file holds."""
    hidden = {h for fn in load_course(root).module(module).functions for h in fn.hidden}
    source = (root / "exercises" / f"test_{module}.py").read_text(encoding="utf-8")
    lines = source.splitlines()
    inside: set[int] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name in hidden:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            inside.update(range(first - 1, node.end_lineno or node.lineno))
    public = {line.strip() for k, line in enumerate(lines) if k not in inside}
    found = {lines[k].strip() for k in inside if len(lines[k].strip()) >= 12 and lines[k].strip() not in public}
    return sorted(found, key=len, reverse=True)


# Issue 41, door 3: writes into its HOME until the disk says no (and keeps the file).
FILLS_ITS_DISK = """
import os
with open(os.path.join(os.environ["HOME"], "filler"), "wb") as f:
    while True:
        f.write(b"x" * 2**20)
"""
# ... to the last byte, then exits: the grader lays its next run out in the room the last one's folder left.
FILLS_ITS_DISK_THEN_EXITS = """
import os
with open(os.path.join(os.environ["HOME"], "filler"), "wb", buffering=0) as f:
    for size in (2**20, 2**12, 1):
        try:
            while True:
                f.write(b"x" * size)
        except OSError:
            pass
os._exit(7)
"""


def build_sandbox_class(
    dest: Path, module: str, *, course: Path, leak: Path, marker: str, private: str, victim: Path, created: Path
) -> dict:
    """The sandbox's hostile class (see above); returns ``{student: {function: (FULL or ZERO, message regex)}}``.

    ``leak``: where the process that tries to outlive its run copies what it reads; ``marker``: in its command
    line; ``private``: a string only the honest students' files hold; ``victim``: a root-only host file the
    grader must never open for a student (nor quote), ``created``: a host path it must never create."""
    fns = [f.name for f in load_course(ROOT).module(module).functions]
    ref = reference_source(module)
    full = {fn: (FULL, "") for fn in fns}
    zero = {fn: (ZERO, "") for fn in fns}
    wrong = replace(ref, {fn: WRONG for fn in fns})
    honest = f"# {private}\n" + ref
    expected: dict[str, dict[str, tuple[str, str]]] = {}

    def add(student: str, source: str, expect: dict) -> None:
        (dest / student).mkdir(parents=True)
        (dest / student / f"{module}.py").write_text(source, encoding="utf-8")
        expected[student] = expect

    reader = ref + LOOKS_FOR_CLASSMATES.format(private=private[::-1])
    for fn in fns:
        reader = wrap(reader, fn, "_look_for_classmates()")
    add("a_honest", honest, full)
    add("b_steals_anywhere", thief_source(module, STEAL_ANYWHERE.format(course=str(course), module=module)), zero)
    add("c_stops_its_zygote", wrong + STOPS_PARENT, zero)
    add("d_outlives_its_run", wrong + OUTLIVES_RUN.format(leak=str(leak), marker=marker), zero)
    add("e_leaves_marks", wrong + LEAVES_MARKS_EVERYWHERE.format(student="e_leaves_marks"), zero)
    add("ea_rewrites_the_kit", wrong + WRITES_KIT, zero)
    add(
        "f_fork_bomb",
        replace(ref, {fns[0]: FORK_BOMB.format(forks=3000, seconds=6173)}),
        {**full, fns[0]: (ZERO, rf"{module}\.{fns[0]} raised RuntimeError: fork failed after \d+ processes")},
    )
    add(
        "g_allocates_3g",
        replace(ref, {fns[1]: ALLOCATES_3G}),
        {
            **full,
            fns[1]: (
                ZERO,
                rf"{module}\.{fns[1]}: the grading process stopped while checking this function: it used more than \d+ MB of memory",
            ),
        },
    )
    add("h_honest_after", honest, full)
    add("z_reads_classmates", reader, full)
    # Issue 41, door 1: stops its zygote at import and crashes in two functions: its box is replaced once, then
    # what is left of its module earns nothing, saying why; the class goes on.
    add(
        "n_stops_zygote_and_crashes",
        replace(ref, {fns[0]: OS_EXIT, fns[1]: OS_EXIT}) + STOPS_PARENT,
        {
            **{fn: (ZERO, r"stopped while checking this function") for fn in fns[:2]},
            **{
                fn: (ZERO, r"your code stopped or broke the process that starts your grading processes")
                for fn in fns[2:]
            },
        },
    )
    # Door 2: links planted for the grader to follow; it opens nothing by name where the student writes.
    add(
        "o_plants_links",
        replace(ref, {fns[0]: OS_EXIT}) + PLANTS_LINKS.format(victim=str(victim), created=str(created)),
        {**full, fns[0]: (ZERO, r"exited with code 7")},
    )
    # Door 4: its process sees its own module's checks, no other module's.
    add(
        "r_reads_other_checks",
        replace(ref, {fns[0]: READS_OTHER_CHECKS}),
        {**full, fns[0]: (ZERO, rf"checks seen: test_{module}\.py\. modules in course\.toml: {module}\.")},
    )
    # Door 4, its own module: the hidden checks' text is handed to its process in a descriptor read and closed before
    # its code runs (nothing of it on disk, in linecache, in a loader); a message quoting it is withheld; reading their
    # code objects is flagged for review.
    hidden_names = ",".join(sorted(h for fn in load_course(ROOT).module(module).functions for h in fn.hidden))
    add(
        "s_reads_own_hidden_checks",
        replace(ref, {fns[0]: READS_OWN_HIDDEN_CHECKS}),
        {
            **full,
            fns[0]: (
                ZERO,
                rf"hidden checks {hidden_names} found through: nothing\. the zygote's descriptors: refused\. read: ",
            ),
        },
    )
    add(
        "t_reads_hidden_code",
        replace(ref, {fns[0]: READS_HIDDEN_CODE.replace("__name__", repr(module))}),
        {**full, fns[0]: (ZERO, r"code names: ")},
    )
    add(
        "u_echoes_hidden_line",
        replace(ref, {fns[0]: ECHOES_HIDDEN_LINE.format(line=hidden_check_lines(module)[0])}),
        {**full, fns[0]: (ZERO, r"quoted the source of one of the course's hidden checks: withheld")},
    )
    # What a check prints is discarded, never kept in the quota nor in memory: a correct submission printing more
    # than its quota keeps full marks; one printing without bound loses that function only, saying why.
    add("v_prints_past_quota", wrap(ref, fns[1], "_print_past_quota()") + PRINTS_PAST_QUOTA, full)
    add(
        "w_prints_without_bound",
        replace(ref, {fns[1]: PRINTS_WITHOUT_BOUND}),
        {**full, fns[1]: (ZERO, rf"{module}\.{fns[1]} raised OutputLimit: your code printed more than 1024 MB")},
    )
    # Door 3: a disk quota per student; past it the student loses only their own functions.
    add(
        "p_fills_its_disk",
        replace(ref, {fns[0]: FILLS_ITS_DISK}),
        {**full, fns[0]: (ZERO, r"No space left on device[\s\S]*disk quota: your sandbox may hold at most \d+ MB")},
    )
    add(
        "q_fills_its_disk_and_exits",
        replace(ref, {fns[0]: FILLS_ITS_DISK_THEN_EXITS}),
        {**full, fns[0]: (ZERO, r"exited with code 7")},
    )
    # Links: the submission is regular files only, read inside the student's folder.
    solutions = course / "solutions"
    linked = {fn: (ZERO, "") for fn in fns}
    (dest / "i_links_exercises").mkdir()
    (dest / "i_links_exercises" / "exercises").symlink_to(solutions, target_is_directory=True)
    expected["i_links_exercises"] = {fn: (ZERO, r"exercises is a symbolic link, not a folder") for fn in fns}
    (dest / "j_links_module").mkdir()
    (dest / "j_links_module" / f"{module}.py").symlink_to(solutions / f"{module}.py")
    expected["j_links_module"] = {fn: (ZERO, rf"{module}\.py is a symbolic link, not a regular file") for fn in fns}
    (dest / "k_hard_links_module").mkdir()
    os.link(solutions / f"{module}.py", dest / "k_hard_links_module" / f"{module}.py")
    expected["k_hard_links_module"] = {
        fn: (ZERO, rf"{module}\.py is a link to another file \(a hard link\)") for fn in fns
    }
    (dest / "l_links_its_folder").symlink_to(solutions, target_is_directory=True)
    expected["l_links_its_folder"] = {fn: (ZERO, r"your submission's folder is a symbolic link") for fn in fns}
    (dest / "m_links_module_in_exercises" / "exercises").mkdir(parents=True)
    (dest / "m_links_module_in_exercises" / "exercises" / f"{module}.py").symlink_to(solutions / f"{module}.py")
    expected["m_links_module_in_exercises"] = {
        fn: (ZERO, rf"{module}\.py is a symbolic link, not a regular file") for fn in fns
    }
    # Not a file at all: a folder named like the module (it once crashed the grader's reader), a pipe (never waited on).
    (dest / "n_module_is_a_folder" / f"{module}.py").mkdir(parents=True)
    ((dest / "n_module_is_a_folder" / f"{module}.py") / "__init__.py").write_text(ref)
    expected["n_module_is_a_folder"] = {fn: (ZERO, rf"{module}\.py is not a regular file") for fn in fns}
    (dest / "o_module_is_a_pipe").mkdir()
    os.mkfifo(dest / "o_module_is_a_pipe" / f"{module}.py")
    expected["o_module_is_a_pipe"] = {fn: (ZERO, rf"{module}\.py is not a regular file") for fn in fns}
    del linked
    return expected


# The Gradescope runner's hostile class (issues 31 and 32, on ``/autograder``): one submission per container, graded
# as root by the bundle's ``run_autograder`` with the live reference in ``<root>/source``. Each student is a dict
# ``{student: (what to lay out in <root>/submission, expectations)}``; see :func:`build_gradescope_class`.

# Where the bundle's answers are on Gradescope: its live reference and its instructor seed (``gradescope.json``),
# by their paths, through ``..`` from wherever the student's process runs, through the grader's processes in
# /proc (pid 1 of the container among them), and the trusted verifier's scratch copies of the course.
GRADESCOPE_ROUTES = """
import glob as _glob
import os as _os

_ROOT = {root!r}
_SECRETS = ("solutions/{module}.py", "gradescope.json")


def _routes():
    for _secret in _SECRETS:
        yield _ROOT + "/source/" + _secret
        yield "/autograder/source/" + _secret
        yield _ROOT + "/submission/../source/" + _secret
        for _up in range(1, 12):
            yield "../" * _up + "source/" + _secret
            yield "../" * _up + _ROOT.lstrip("/") + "/source/" + _secret
        for _pattern in ("/proc/1/cwd/{{s}}", "/proc/1/root{{r}}/source/{{s}}", "/proc/*/cwd/{{s}}", "/proc/*/cwd/../{{s}}",
                         "/proc/*/cwd/../source/{{s}}", "/proc/*/root{{r}}/source/{{s}}",
                         "/proc/*/root/tmp/autograder-*/course/{{s}}", "/proc/*/cwd/../course/{{s}}"):
            yield from _glob.glob(_pattern.format(s=_secret, r=_ROOT))
        for _base in (_ROOT, "/autograder"):
            for _depth in ("/*/", "/*/*/", "/*/*/*/"):
                yield from _glob.glob(_base + _depth + _secret)
        for _base in ("/tmp", "/var/tmp", "/dev/shm"):  # the grader's scratch folders (not the host's other files)
            yield from _glob.glob(_base + "/autograder-*/**/" + _secret, recursive=True)


def _readable():
    found = set()
    for _path in _routes():
        try:
            with open(_path, "rb") as _f:
                if _f.read(1):
                    found.add(_path)
        except OSError:
            pass
    return sorted(found)


def _find(name):
    for _path in _readable():
        if _path.endswith(".py"):
            _scope = {{}}
            try:
                with open(_path) as _f:
                    exec(_f.read(), _scope)
            except Exception:
                continue
            if name in _scope:
                return _scope[name]
    return None
"""

# Says what it could read as its failure: a route that works shows up in results.json (nothing must).
REPORTS_WHAT_IT_READ = "raise RuntimeError('the thief read: ' + (', '.join(_readable()) or 'nothing'))"

# Writes results.json (and the bundle) at import, links the runner's temporary results.json to the bundle, then leaves a double-forked process in a session of its own that
# rewrites results.json every 0.2 s for 4 minutes (after the runner wrote its own) and copies what it can read of
# the container into {leak}. Its command line carries {marker}.
FORGES_RESULTS_LATER = """
import json as _json
import os as _os
import sys as _sys

_FORGED = _json.dumps({{"score": 1000.0, "output": "{marker}", "tests": []}})
for _path in ({root!r} + "/results/results.json", {root!r} + "/source/course.toml", "/autograder/results/results.json"):
    try:
        _os.makedirs(_os.path.dirname(_path), exist_ok=True)
        with open(_path, "w") as _f:
            _f.write(_FORGED)
    except OSError:
        pass
try:  # where the results folder is writable: a link where the runner writes its results next, as root
    _os.symlink({root!r} + "/source/course.toml", {root!r} + "/results/results.json.tmp")
except OSError:
    pass
_LATER = '''
import glob, os, shutil, time
end = time.time() + 240
os.chdir("/")
while time.time() < end:
    for path in ({root!r} + "/results/results.json", "/autograder/results/results.json"):
        try:
            with open(path, "w") as f:
                f.write(%r)
        except OSError:
            pass
    try:
        os.makedirs({leak!r}, exist_ok=True)
        for p in glob.glob({root!r} + "/*/*.py") + glob.glob({root!r} + "/*/*/*.py") + glob.glob("/proc/*/cwd/*.py"):
            try:
                shutil.copy(p, os.path.join({leak!r}, p.replace("/", "_")))
            except Exception:
                pass
    except OSError:
        pass
    time.sleep(0.2)
# {marker}
''' % _FORGED
if _os.fork() == 0:
    try:
        _os.setsid()
        if _os.fork() == 0:
            _os.execv(_sys.executable, [_sys.executable, "-c", _LATER])
    finally:
        _os._exit(0)
"""


def build_gradescope_class(module: str, *, roots: dict[str, Path], leak: Path, marker: str) -> dict:
    """Lay out each hostile student's ``<root>/submission`` (``roots``: ``{student: Gradescope root}``, each with
    its ``source/`` unpacked and an empty ``submission/``; a process left behind carries ``<marker>-<student>`` in
    its command line); returns ``{student: {function: (FULL or ZERO, regex)}}``.

    - ``steals_and_forges``: every function answers with the bundle's reference if any route reads it (else wrong),
      the last one says what it read; at import it writes results.json and the bundle and leaves a process behind
      that rewrites results.json after the run and copies the container's files into ``leak``, leaves marks in
      every shared folder and rewrites the kit.
    - ``snoops_next_to_answers``: the reference, every function reading every route first, with the same import
      (results.json, the process left behind): it keeps exactly what its answers earn.
    - ``forges_reports``: issue 32's forgery on the runner: a jit-breaking ``replace_negatives`` and a wrong
      ``scatter_add`` whose reports (the reporter found through ``gc``, the session's outcomes) say "passed".
    - ``reads_own_hidden_checks``: every route to the text of the checks that grade it (issue 41, door 4), sent back
      through a visible function's failure message: it finds none.
    - ``stops_zygote_and_crashes`` (door 1) and ``fills_its_disk`` (door 3): as in the sandbox class.
    - links to the bundle's reference: ``exercises -> source/solutions``, the module file linked or hard-linked to
      it, the submission folder itself a link to ``source/solutions``."""
    fns = [f.name for f in load_course(ROOT).module(module).functions]
    ref = reference_source(module)
    zero = {fn: (ZERO, "") for fn in fns}
    expected: dict[str, dict[str, tuple[str, str]]] = {}

    def write(student: str, source: str, expect: dict) -> None:
        (roots[student] / "submission" / f"{module}.py").write_text(source, encoding="utf-8")
        expected[student] = expect

    if "steals_and_forges" in roots:
        root = str(roots["steals_and_forges"])
        routes = GRADESCOPE_ROUTES.format(root=root, module=module)
        thief = replace(thief_source(module, routes), {fns[-1]: REPORTS_WHAT_IT_READ})
        thief += FORGES_RESULTS_LATER.format(root=root, leak=str(leak), marker=f"{marker}-steals_and_forges")
        thief += LEAVES_MARKS_EVERYWHERE.format(student="steals_and_forges") + WRITES_KIT
        write("steals_and_forges", thief, {**zero, fns[-1]: (ZERO, r"the thief read: nothing")})
    if "snoops_next_to_answers" in roots:
        root = str(roots["snoops_next_to_answers"])
        snooper = ref + GRADESCOPE_ROUTES.format(root=root, module=module) + "\n_snooped = []\n"
        for fn in fns:  # once per process: what it reads cannot change its (correct) answers
            snooper = wrap(snooper, fn, f"_snooped or _snooped.append(_find({fn!r}))")
        snooper += FORGES_RESULTS_LATER.format(root=root, leak=str(leak), marker=f"{marker}-snoops_next_to_answers")
        # right values; what it does to snoop (os beyond a path, reading files) withholds for review the checks its
        # own process witnessed (issue 42)
        write("snoops_next_to_answers", snooper, {fn: (WITHHELD, r"needs review") for fn in fns})
    if "forges_reports" in roots:
        jit_breaking = "import numpy as _np\ny = _np.array(args[0])\ny[y < 0] = args[1]\nreturn jnp.asarray(y)"
        bodies = {"replace_negatives": jit_breaking} if "replace_negatives" in fns else {}
        forger = replace(ref, {**bodies, fns[1]: WRONG}) + FORGES_OUTCOMES + FORGES_REPORTS
        write("forges_reports", forger, {fn: (ZERO, r"tampering detected") for fn in fns})
    if "reads_own_hidden_checks" in roots:
        # issue 41, door 4 on the runner: where a failure message is how a hidden check's text would reach a student
        # before the due date; the routes it takes flag it for review (what its process witnessed is withheld)
        hidden_names = ",".join(sorted(h for fn in load_course(ROOT).module(module).functions for h in fn.hidden))
        write(
            "reads_own_hidden_checks",
            replace(ref, {fns[0]: READS_OWN_HIDDEN_CHECKS}),
            {
                **{fn: (WITHHELD, r"needs review") for fn in fns},
                fns[0]: (ZERO, rf"hidden checks {hidden_names} found through: nothing\. "),
            },
        )
    if "stops_zygote_and_crashes" in roots:
        # issue 41, door 1 on the runner: its box is replaced once, then what is left earns nothing, saying why, and
        # results.json is written all the same
        write(
            "stops_zygote_and_crashes",
            replace(ref, {fns[0]: OS_EXIT, fns[1]: OS_EXIT}) + STOPS_PARENT,
            {
                **{fn: (ZERO, r"stopped while checking this function") for fn in fns[:2]},
                **{
                    fn: (ZERO, r"your code stopped or broke the process that starts your grading processes")
                    for fn in fns[2:]
                },
            },
        )
    if "fills_its_disk" in roots:
        # door 3 on the runner: the container's disk holds results.json; past its quota the student loses that
        # function only (what it does to fill it, files and the environment, withholds for review the checks its
        # own process witnessed, as the screen does for every module that reaches that far)
        write(
            "fills_its_disk",
            replace(ref, {fns[0]: FILLS_ITS_DISK}),
            {
                **{fn: (WITHHELD, r"needs review") for fn in fns},
                fns[0]: (ZERO, r"No space left on device[\s\S]*disk quota: your sandbox may hold at most \d+ MB"),
            },
        )
    link_messages = {
        "links_exercises": r"exercises is a symbolic link, not a folder",
        "links_module": rf"{module}\.py is a symbolic link, not a regular file",
        "hard_links_module": rf"{module}\.py is a link to another file \(a hard link\)",
        "links_submission": r"your submission's folder is a symbolic link",
    }
    for student, message in link_messages.items():
        if student not in roots:
            continue
        submission, solutions = roots[student] / "submission", roots[student] / "source" / "solutions"
        if student == "links_exercises":
            (submission / "exercises").symlink_to(solutions, target_is_directory=True)
        elif student == "links_module":
            (submission / f"{module}.py").symlink_to(solutions / f"{module}.py")
        elif student == "hard_links_module":
            os.link(solutions / f"{module}.py", submission / f"{module}.py")
        else:
            submission.rmdir()
            submission.symlink_to(solutions, target_is_directory=True)
        expected[student] = {fn: (ZERO, message) for fn in fns}
    return expected
