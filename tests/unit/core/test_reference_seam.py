"""The reference seam is one named protocol (``core.oracle.Reference``; ``core.oracle.StandIn`` for a function
that stands for another one), and every implementation declares it and defines every member itself."""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import typing

import pytest
from support import ROOT

from autograder.core import oracle
from autograder.core.oracle import OwnAnswers, Reference, StandIn
from autograder.grading.trusted.shared import SharedReference
from autograder.recording.givens import GivensFirst
from autograder.recording.recorded import RecordedFunction, RecordedOracle, RecordingFunction, RecordingOracle

REFERENCES = (oracle.Oracle, OwnAnswers, GivensFirst, RecordingOracle, RecordedOracle, SharedReference)
STAND_INS = (RecordedFunction, RecordingFunction)


def members(protocol) -> set[str]:
    return (
        set(typing.get_type_hints(protocol))
        | {name for name, value in vars(protocol).items() if inspect.isfunction(value) and not name.startswith("_")}
        | ({"__call__"} if "__call__" in vars(protocol) else set())
    )


def assigned_in_init(cls) -> set[str]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls.__init__)))
    return {
        target.attr
        for node in ast.walk(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for target in ast.walk(node)
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
    }


def own_members(cls, protocol) -> set[str]:
    """Members the class defines itself (or inherits from a class other than the protocol)."""
    defined = {
        name
        for klass in cls.__mro__
        if klass not in (protocol, typing.Protocol, typing.Generic, object)
        for name in vars(klass)
    }
    return defined | assigned_in_init(cls)


@pytest.mark.parametrize("cls", REFERENCES, ids=lambda c: c.__name__)
def test_every_oracle_declares_the_reference_protocol_and_defines_all_of_it(cls):
    assert Reference in cls.__mro__  # declared, not only shaped alike
    missing = members(Reference) - own_members(cls, Reference)
    assert not missing, f"{cls.__name__} leaves {sorted(missing)} to the protocol's empty stubs"


@pytest.mark.parametrize("cls", STAND_INS, ids=lambda c: c.__name__)
def test_every_stand_in_class_declares_the_stand_in_protocol_and_defines_all_of_it(cls):
    assert StandIn in cls.__mro__
    missing = members(StandIn) - own_members(cls, StandIn)
    assert not missing, f"{cls.__name__} leaves {sorted(missing)} to the protocol's empty stubs"


def test_the_protocols_name_their_members():
    assert members(Reference) == {"module_name", "knows_only_its_own_path", "sibling", "transformed"}
    assert members(StandIn) == {"__call__", "jit_stand_in", "transform_stand_in"}


def test_instances_satisfy_the_protocols_at_run_time():
    student = types.ModuleType("m")
    student.f = lambda x: x
    own = OwnAnswers("m", student)
    assert isinstance(own, Reference) and isinstance(GivensFirst("m", None, own), Reference)
    assert not isinstance(student, Reference)
    assert not isinstance(student.f, StandIn)


def test_jit_once_asks_a_stand_in_function_by_the_protocol_not_by_probing(tmp_path):
    from autograder.checks import structure

    asked = []

    def stand_in(x):
        return x

    stand_in.jit_stand_in = lambda static: asked.append(("jit", static)) or stand_in
    stand_in.transform_stand_in = lambda label, transform: asked.append(("transform", label)) or stand_in
    assert isinstance(stand_in, StandIn)
    assert structure.jit_once(stand_in, (1,)) is stand_in
    assert structure.transformed_once(stand_in, "grad", lambda f: None) is stand_in
    assert asked == [("jit", (1,)), ("transform", "grad")]
    source = inspect.getsource(structure)
    assert 'hasattr(fn, "jit_stand_in")' not in source and 'hasattr(fn, "transform_stand_in")' not in source


def test_every_function_made_a_stand_in_anywhere_gets_both_members():
    """The grading processes' stand-ins are closures given the two members as attributes: each function that
    sets one sets the other (found by reading the package, wherever the grading wing keeps them)."""
    found = 0
    for path in (ROOT / "autograder").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            set_attrs = {
                target.attr
                for sub in ast.walk(node)
                if isinstance(sub, ast.Assign)
                for target in sub.targets
                if isinstance(target, ast.Attribute)
            }
            if set_attrs & {"jit_stand_in", "transform_stand_in"}:
                found += 1
                assert {"jit_stand_in", "transform_stand_in"} <= set_attrs, f"{path}:{node.name}"
    assert found >= 2
