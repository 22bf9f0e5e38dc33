"""What the system tests of verdicts decided on the trusted side share (issue 42): the course's references graded for
real (grading process and verifier) with what the verifier was given and said, and the programs a transcript
records (what a forger replaces).

- :func:`graded_for_real`  a context: ``(grader, result, seen)``, ``seen`` holding the claims, the transcripts, the
                           sources (checks decided from the source), the verdicts of the grade run and the plan (the tests' own later calls of the verifier are not spied on)
- :func:`programs_of`      the recorded programs of one check's transcript, by key
- :func:`arguments`        the argument types of a recorded program's ``main`` (what a forged program must take)
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import jax
import numpy as np
from support import ROOT

from autograder.checks import lowered
from autograder.core.course import load_course
from autograder.grading import transcript
from autograder.grading.grader import Grader, Options
from autograder.recording.plain_data import name_classes_by_course_module

PROGRAM_MAGIC = b"AGPROG1"
_DTYPES = {"f32": np.float32, "i32": np.int32, "ui32": np.uint32}


@contextlib.contextmanager
def graded_for_real(
    folder: Path, modules: Sequence[str], timeout: int = 60, sources: dict[str, str] | None = None
) -> Iterator[tuple]:
    """The references of ``modules`` (or the text ``sources`` gives a module) copied into ``folder`` and graded
    there by a grader of one worker."""
    for module in modules:
        if sources and module in sources:
            (folder / f"{module}.py").write_text(sources[module], encoding="utf-8")
        else:
            (folder / f"{module}.py").write_bytes((ROOT / "solutions" / f"{module}.py").read_bytes())
    grader = Grader(load_course(ROOT), Options(tuple(modules), timeout, 4000, 1), workers=1)
    seen: dict = {
        "claims": [],
        "transcripts": {},
        "verdicts": {},
        "sources": {},
        "plan": {c.id: c for c in grader.trusted.plan},
    }
    verify = grader.trusted.verify

    def spy(claims, transcripts, sources=None, submission=None):
        verdicts = verify(claims, transcripts, sources, submission)
        seen["claims"] += list(claims)
        seen["transcripts"].update(transcripts)
        seen["verdicts"].update(verdicts)
        seen["sources"].update(sources or {})
        return verdicts

    grader.trusted.verify = spy
    try:
        result = grader.grade_submission(folder.name, folder)
        grader.trusted.verify = verify  # the tests' own calls must not overwrite what the grade run recorded
        yield grader, result, seen
    finally:
        grader.close()


def programs_of(calls: dict) -> dict[str, np.ndarray]:
    """The recorded programs of a check's transcript, by key (a value this side cannot decode, e.g. one holding
    a state of the course's classes, is not a program)."""
    found = {}
    for key, encoded in calls.items():
        try:
            value = transcript.decode(encoded, transcript.statics())
        except ValueError:
            continue
        if isinstance(value, np.ndarray) and value.dtype == np.uint8 and value.tobytes().startswith(PROGRAM_MAGIC):
            found[key] = value
    return found


def main_text(payload: np.ndarray) -> str:
    """The StableHLO text of a recorded program (its header skipped)."""
    raw = payload.tobytes()
    size = int.from_bytes(raw[8:12], "big")
    exported = lowered.exported_from(
        **{f: None for f in ("in_tree", "out_tree", "in_shardings_hlo", "out_shardings_hlo", "_get_vjp")},
        fun_name="main",
        in_avals=(),
        out_avals=(),
        _has_named_shardings=False,
        _in_named_shardings=(),
        _out_named_shardings=(),
        nr_devices=1,
        platforms=("cpu",),
        ordered_effects=(),
        unordered_effects=(),
        disabled_safety_checks=(),
        mlir_module_serialized=raw[12 + size :],
        calling_convention_version=10,
        module_kept_var_idx=(),
        uses_global_constants=False,
    )
    return exported.mlir_module()


def types_in(text: str) -> list[jax.ShapeDtypeStruct]:
    """The tensor types named in ``text`` (a signature), in order."""
    found = []
    for dims, dtype in re.findall(r"tensor<((?:\d+x)*)([a-z]\w*)>", text):
        shape = tuple(int(d) for d in dims.split("x") if d)
        found.append(jax.ShapeDtypeStruct(shape, _DTYPES[dtype]))
    return found


def arguments(payload: np.ndarray) -> list[jax.ShapeDtypeStruct]:
    """The argument types of a recorded program's ``main`` (what a forger matches)."""
    match = re.search(r"func\.func public @main\((.*?)\)\s*->", main_text(payload))
    assert match is not None, "a recorded program without a public main"
    return types_in(match.group(1))


def main_types(payload: np.ndarray) -> tuple[list[jax.ShapeDtypeStruct], list[jax.ShapeDtypeStruct]]:
    """(argument types, result types) of a recorded program's ``main``."""
    match = re.search(r"func\.func public @main\((.*?)\)\s*->\s*(.*?)\s*\{\s*$", main_text(payload), re.M)
    assert match is not None, "a recorded program without a public main"
    return types_in(match.group(1)), types_in(match.group(2))


def course_statics(modules: Sequence[str]):
    """Statics that decode and encode the values of ``modules``' transcripts, their course classes (a model in a
    state's ``apply_fn``) taken from the references, loaded here under names of their own and named as the course
    module's (so that what is encoded names them as the verifier resolves them)."""
    loaded = {}
    for module in modules:
        spec = importlib.util.spec_from_file_location(f"certificates_{module}", ROOT / "solutions" / f"{module}.py")
        assert spec is not None and spec.loader is not None
        loaded[module] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded[module])
        name_classes_by_course_module(loaded[module], module)

    def course_class(module: str, qualname: str) -> type:
        found = loaded[module]
        for part in qualname.split("."):
            found = getattr(found, part)
        return found

    return transcript.statics(course_class)
