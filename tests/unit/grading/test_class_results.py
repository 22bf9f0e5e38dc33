"""The trusted side's class results (``grading.trusted.shared``): the reference's result for a check's arguments is
computed once per class and handed to every later student's replay, as the reference would have returned it; what
is not plain data (a traced call, a function argument, an object result) is never shared."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from autograder.core.oracle import Reference
from autograder.grading import transcript
from autograder.grading.trusted.shared import SWITCH, ClassResults, SharedReference, sharing_enabled
from autograder.grading.wire import VerifierRequest


class Ref(Reference):
    """A module's reference that counts its calls."""

    knows_only_its_own_path = False

    def __init__(self, module_name: str = "m") -> None:
        self.module_name = module_name
        self.calls: list[str] = []
        self.CONSTANT = 3

        class Model:
            pass

        self.Model = Model

    def double(self, x):
        self.calls.append("double")
        return jnp.asarray(x) * 2

    def pair(self, x):
        self.calls.append("pair")
        return {"a": np.asarray(x) + 1, "b": (jnp.asarray(x), 2.5)}

    def apply(self, f, x):
        self.calls.append("apply")
        return f(x)

    def thing(self, x):
        self.calls.append("thing")
        return object()

    def sibling(self, module: str) -> Ref:
        return Ref(module)

    def transformed(self, name, label, transform):
        return transform(getattr(self, name))


def shared(ref: Ref, results: ClassResults, check: str = "m::test_double") -> SharedReference:
    return results.shared(ref, check, transcript.statics())


def test_a_later_student_gets_the_result_computed_for_an_earlier_one():
    ref, results = Ref(), ClassResults(seed=0)
    first = shared(ref, results).double(np.arange(3.0))
    second = shared(ref, results).double(np.arange(3.0))  # the next student's replay of the same check
    assert ref.calls == ["double"]
    assert second is first  # a JAX array is immutable: the reference's own result
    assert (results.hits, results.misses) == (1, 1)
    shared(ref, results).double(np.arange(4.0))  # other arguments
    shared(ref, results, "m::test_other").double(np.arange(3.0))  # another check
    assert ref.calls == ["double"] * 3


def test_a_reference_function_is_the_same_object_at_every_access():
    """A check that jits what it is given (``jitted(reference.f)``, keyed by the function) compiles it once: a new
    stand-in at every access made it trace and compile again for every input."""
    ref, results = Ref(), ClassResults(seed=0)
    assert shared(ref, results).double is shared(ref, results, "m::test_other").double
    jitted = jax.jit(shared(ref, results).double)
    for i in range(3):
        jax.jit(shared(ref, results).double)  # (jit keys its traces by the function)
        assert jitted(np.arange(3.0) + i).tolist() == (2 * (np.arange(3.0) + i)).tolist()
    assert ref.calls == ["double"]  # traced once


def test_containers_and_numpy_arrays_are_fresh_for_every_caller():
    ref, results = Ref(), ClassResults(seed=0)
    first = shared(ref, results).pair(np.arange(3.0))
    first["a"][0] = 99.0  # a check that writes into what it was given
    first["c"] = "added"
    second = shared(ref, results).pair(np.arange(3.0))
    assert ref.calls == ["pair"]
    assert set(second) == {"a", "b"} and second["a"].tolist() == [1.0, 2.0, 3.0]
    assert second["b"][1] == 2.5 and second["b"][0] is first["b"][0]


def test_what_is_not_data_is_never_shared():
    ref, results = Ref(), ClassResults(seed=0)
    for _ in range(2):
        shared(ref, results).apply(lambda x: x + 1, np.arange(3.0))  # a function argument (a student's replay)
        shared(ref, results).thing(np.arange(3.0))  # an object result
    jitted = jax.jit(shared(ref, results).double)  # traced arguments
    assert jitted(np.arange(3.0)).tolist() == [0.0, 2.0, 4.0]
    assert jitted(np.arange(3.0) + 1).tolist() == [2.0, 4.0, 6.0]
    assert ref.calls == ["apply", "thing", "apply", "thing", "double"]  # jit traced it once
    assert results.hits == 0


def test_a_donated_result_is_computed_again():
    ref, results = Ref(), ClassResults(seed=0)
    first = shared(ref, results).double(np.arange(3.0))
    first.delete()
    again = shared(ref, results).double(np.arange(3.0))
    assert not again.is_deleted() and again.tolist() == [0.0, 2.0, 4.0]
    assert ref.calls == ["double", "double"]


def test_the_results_kept_are_bounded():
    ref, results = Ref(), ClassResults(seed=0, max_bytes=8)
    shared(ref, results).double(np.arange(3.0))
    shared(ref, results).double(np.arange(3.0))
    assert ref.calls == ["double", "double"] and results.bytes == 0


def test_classes_constants_siblings_and_transforms():
    ref, results = Ref(), ClassResults(seed=0)
    view = shared(ref, results)
    assert isinstance(view, Reference) and view.module_name == "m" and view.knows_only_its_own_path is False
    assert view.CONSTANT == 3 and view.Model is ref.Model
    assert view.sibling("data").module_name == "data"
    grad = view.transformed("double", "grad", lambda f: lambda x: f(x) + 0)
    grad(np.arange(2.0))
    view.transformed("double", "grad", lambda f: lambda x: f(x) + 0)(np.arange(2.0))
    assert ref.calls == ["double"]
    assert view.double.__name__ == "double"


def test_grade_shares_unless_switched_off():
    assert sharing_enabled({}) and sharing_enabled({SWITCH: "1"}) and not sharing_enabled({SWITCH: "0"})
    assert VerifierRequest("serve").share is True
    assert VerifierRequest.from_wire(VerifierRequest("serve", share=False).to_wire()).share is False


class Planned:
    def __init__(self, id: str, correctness: bool, decided: str = "observed", analysed: bool = False):
        self.id, self.correctness, self.analysed = id, correctness, analysed
        self.decided = "values" if correctness else decided


def test_a_replayed_check_on_the_same_transcript_gets_the_verdict_reached_before():
    from autograder.grading.wire import Replay, Verdict

    results = ClassResults(seed=0)
    plan = [
        Planned("m::test_f_value", True),
        Planned("m::test_f_program", False, "program"),
        Planned("m::test_f_pure", False, "values"),
        Planned("m::test_f_observed", False, "observed"),
        Planned("m::test_f_source", False, "source"),
    ]
    ada = {check.id: {"d1": {"tree": 1}} for check in plan}
    passed = {check.id: Verdict(Replay.PASSED) for check in plan}
    results.learn(plan, passed, ada)
    claims = {check.id for check in plan}
    bob = {check.id: {"d1": {"tree": 1}} for check in plan}  # the same answers, byte for byte
    replayed = {"m::test_f_value", "m::test_f_program", "m::test_f_pure"}  # not one the verifier does not replay
    assert results.known_verdicts(claims, bob) == {check: Verdict(Replay.PASSED) for check in replayed}
    cy = {check.id: {"d1": {"tree": 2}} for check in plan}  # another answer: replayed
    assert results.known_verdicts(claims, cy) == {} and results.verdicts_reused == 3
    failed = {"m::test_f_program": Verdict(Replay.FAILED, "grows with the batch")}
    results.learn(plan, failed, cy)  # a failure is kept as well, for its own transcript
    assert results.known_verdicts(claims, cy) == failed


def test_a_check_decided_from_the_source_too_gets_a_verdict_only_for_the_same_source():
    from autograder.grading.wire import Replay, Verdict

    results = ClassResults(seed=0)
    plan = [Planned("m::test_f_value", True), Planned("m::test_f_retraces", False, "program", analysed=True)]
    calls = {check.id: {"d1": {"tree": 1}} for check in plan}
    verdicts = {"m::test_f_value": Verdict(Replay.PASSED), "m::test_f_retraces": Verdict(Replay.FAILED, "retraces")}
    results.learn(plan, verdicts, calls, {"m": "def f(x):\n    return x\n"})
    claims = set(verdicts)
    # the same transcript, another source (the analysis might find another cause): only the value check is known
    other = {"m": "def f(x):\n    return x  # mine\n"}
    assert results.known_verdicts(claims, calls, other) == {"m::test_f_value": Verdict(Replay.PASSED)}
    assert results.known_verdicts(claims, calls, {}) == {"m::test_f_value": Verdict(Replay.PASSED)}
    assert results.known_verdicts(claims, calls, {"m": "def f(x):\n    return x\n"}) == verdicts


def test_the_checks_kept_are_those_the_verifier_replays():
    from autograder.grading.trusted.shared import REPLAYED
    from autograder.pytest_plugin.decided import PROGRAM, VALUES

    assert set(REPLAYED) == {VALUES, PROGRAM}
