"""Issue 42: "uses every PRNG key at most once" (``prng``), "calls f exactly once" (``autodiff``) and "is one vmap of
linear" (``vmap_linear``) are decided from the program (:mod:`autograder.checks.keyuse`,
:mod:`autograder.checks.marked`, :mod:`autograder.checks.vmap_program`), as ``test_program_certificates.py`` proves
for "works under jit".

The references of both modules are graded for real (grading process and verifier): the moved checks are claimed,
recorded as programs and confirmed. Then the verifier is asked again with the grading process's word kept
("passed") and its recorded programs forged, as a process whose function reuses a key or calls ``f`` twice would
forge them: the program of such a function, of one that splits the same key twice for the reference's keys, of
one that returns a constant; a batched_linear that loops over the examples, is written by hand, maps W and b too, or
gives zeros. None is confirmed; the honest transcripts are, asked the same way. In the same grader,
an honest student whose functions reuse a key in a loop (which the grading process, holding no reference, cannot
see), call f twice or loop over the examples fails those checks with the trusted side's account, not "unconfirmed".
"""

from __future__ import annotations

import copy
from pathlib import Path

import certificates
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from support import with_function

from autograder.checks import marked, programs, vmap_program
from autograder.core.status import Status
from autograder.grading import transcript

MODULES = ("prng", "autodiff", "vmap_linear")
KEY_CHECK = "prng::test_two_normals_uses_each_key_once"
ONCE_CHECKS = ("autodiff::test_hvp_calls_f_once", "autodiff::test_directional_derivative_calls_f_once")
VMAP_CHECK = "vmap_linear::test_batched_linear_is_one_vmap_of_linear[B=8]"


@pytest.fixture(scope="module")
def graded_references(tmp_path_factory):
    with certificates.graded_for_real(tmp_path_factory.mktemp("references"), MODULES) as (grader, result, seen):
        wrong = tmp_path_factory.mktemp("wrong")
        for module, replacement in WRONG.items():
            (wrong / f"{module}.py").write_text(with_function(module, replacement), encoding="utf-8")
        seen["wrong"] = grader.grade_submission("wrong", Path(wrong))
        yield grader, result, seen


WRONG = {
    "prng": """
def random_walk(key, n_steps):
    key, sub = jax.random.split(key)

    def step(total, _):
        total = total + jax.random.normal(sub)
        return total, total

    return jax.lax.scan(step, 0.0, None, length=n_steps)[1]
""",
    "autodiff": """
def value_and_gradient(f, x):
    return f(x), jax.grad(f)(x)
""",
    "vmap_linear": """
def batched_linear(xs, W, b):
    return jnp.stack([linear(x, W, b) for x in xs])
""",
}


def _forge(check: str, seen: dict, function, *arguments) -> dict:
    """The check's transcript with every recorded program replaced by the program of ``function`` (lowered for
    ``arguments``, the types the check's program takes)."""
    forged = copy.deepcopy(seen["transcripts"][check])
    recorded = certificates.programs_of(forged)
    assert recorded, check
    payload = programs.pack(jax.export.export(jax.jit(function))(*arguments))
    for key in recorded:
        forged[key] = transcript.encode(payload, transcript.statics())
    return forged


# two_normals, forged: the program is lowered for a key's data (uint32[2]), which a typed key lowers to as well


def _draws_twice_from_one_subkey(key):
    key, sub = jax.random.split(key)
    return key, jax.random.normal(sub), jax.random.normal(sub)


def _returns_the_input_key(key):
    _, k1, k2 = jax.random.split(key, 3)
    return key, jax.random.normal(k1), jax.random.normal(k2)


def _splits_the_key_twice(key):  # the reference's values, from a key split twice
    _, k1, _ = jax.random.split(key, 3)
    new, _, k2 = jax.random.split(key, 3)
    return new, jax.random.normal(k1), jax.random.normal(k2)


def _constant(key):
    return key, jnp.float32(0.5), jnp.float32(-0.5)


KEY_FORGERIES = {
    "draws-twice-from-one-subkey": _draws_twice_from_one_subkey,
    "returns-the-input-key": _returns_the_input_key,
    "splits-the-key-twice": _splits_the_key_twice,
    "constant": _constant,
}


# hvp and directional_derivative, forged: f is the check's own (tanh_of_running_sum, sin_times_running_sum), marked


def _tanh_of_running_sum(x):
    return jnp.sum(jnp.tanh(jnp.cumsum(jnp.ravel(x))) ** 2)


def _sin_times_running_sum(x):
    return jnp.sin(x) * jnp.cumsum(x)


def _hvp_and_f_again(x, v):
    f = marked.marked(_tanh_of_running_sum)
    return jax.jvp(jax.grad(f), (x,), (v,))[1] + 0 * f(x)


def _hvp_by_finite_differences(x, v):
    g = jax.grad(marked.marked(_tanh_of_running_sum))
    return (g(x + 1e-2 * v) - g(x - 1e-2 * v)) / 2e-2


def _tangent_by_central_difference(x, v):
    f = marked.marked(_sin_times_running_sum)
    return (f(x + 1e-3 * v) - f(x - 1e-3 * v)) / 2e-3


def _unmarked_tangent(x, v):  # one forward pass, but of another function than the f the check handed over
    return jax.jvp(_sin_times_running_sum, (x,), (v,))[1]


ONCE_FORGERIES = {
    ("autodiff::test_hvp_calls_f_once", "f-again"): _hvp_and_f_again,
    ("autodiff::test_hvp_calls_f_once", "finite-differences-of-gradients"): _hvp_by_finite_differences,
    ("autodiff::test_directional_derivative_calls_f_once", "central-difference"): _tangent_by_central_difference,
    ("autodiff::test_directional_derivative_calls_f_once", "another-f"): _unmarked_tangent,
}
VECTOR = jax.ShapeDtypeStruct((5,), np.float32)  # the checks' x and v (strategies: vectors of shape (5,))


# batched_linear, forged: the check's B=8 problem is (xs (8, 4), W (4, 1), b (1,)); linear's arguments marked as
# the check marks them (vmap_program.MARKS)


def _marked_linear(x, W, b):
    x, W, b = (mark(a) for a, (_, mark) in zip((x, W, b), vmap_program.MARKS))
    return x @ W + b


VMAP_FORGERIES = {
    "python-loop": lambda xs, W, b: jnp.stack([_marked_linear(x, W, b) for x in xs]),
    "lax-map": lambda xs, W, b: jax.lax.map(lambda x: _marked_linear(x, W, b), xs),
    "hand-written": lambda xs, W, b: xs @ W + b,
    "maps-W-and-b-too": lambda xs, W, b: jax.vmap(_marked_linear)(
        xs, jnp.broadcast_to(W, (xs.shape[0], *W.shape)), jnp.broadcast_to(b, (xs.shape[0], *b.shape))
    ),
    "zeros-after-one-vmap": lambda xs, W, b: 0 * jax.vmap(_marked_linear, in_axes=(0, None, None))(xs, W, b),
}
VMAP_SAID = {
    "python-loop": "calls linear on one example at a time (8 call(s)",
    "lax-map": "lax.map (or lax.scan) runs it once per example",
    "hand-written": "never calls linear",
    "maps-W-and-b-too": "maps linear over W, b too",
    "zeros-after-one-vmap": "does not give the reference's values",
}
XS, W, B = (jax.ShapeDtypeStruct(s, np.float32) for s in ((8, 4), (4, 1), (1,)))


def test_the_references_key_use_and_passes_are_confirmed(graded_references):
    _, result, seen = graded_references
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    for check in (KEY_CHECK, *ONCE_CHECKS, VMAP_CHECK):
        assert check in seen["claims"] and certificates.programs_of(seen["transcripts"][check]), check
        assert str(seen["verdicts"][check].outcome) == str(Status.PASSED), seen["verdicts"][check]


@pytest.mark.parametrize("kind", KEY_FORGERIES)
def test_a_forged_key_use_earns_nothing(graded_references, kind):
    grader, _, seen = graded_references
    forged = _forge(KEY_CHECK, seen, KEY_FORGERIES[kind], jax.random.PRNGKey(0))
    verdicts = grader.trusted.verify([KEY_CHECK], {KEY_CHECK: forged})
    assert str(verdicts[KEY_CHECK].outcome) == str(Status.FAILED), verdicts
    assert "uses every PRNG key at most once" in verdicts[KEY_CHECK].message


@pytest.mark.parametrize("check, kind", list(ONCE_FORGERIES), ids=[k for _, k in ONCE_FORGERIES])
def test_a_forged_forward_pass_count_earns_nothing(graded_references, check, kind):
    grader, _, seen = graded_references
    forged = _forge(check, seen, ONCE_FORGERIES[check, kind], VECTOR, VECTOR)
    verdicts = grader.trusted.verify([check], {check: forged})
    assert str(verdicts[check].outcome) == str(Status.FAILED), verdicts
    assert "calls f exactly once" in verdicts[check].message


@pytest.mark.parametrize("kind", VMAP_FORGERIES)
def test_a_forged_one_vmap_earns_nothing(graded_references, kind):
    grader, _, seen = graded_references
    forged = _forge(VMAP_CHECK, seen, VMAP_FORGERIES[kind], XS, W, B)
    verdict = grader.trusted.verify([VMAP_CHECK], {VMAP_CHECK: forged})[VMAP_CHECK]
    assert str(verdict.outcome) == str(Status.FAILED), verdict
    assert "batched_linear is built from linear with one jax.vmap" in verdict.message, verdict.message
    assert VMAP_SAID[kind] in verdict.message, verdict.message


def test_the_honest_transcripts_are_confirmed_again(graded_references):
    """The control: the same verifier, asked the same way with the recorded programs as they were."""
    grader, _, seen = graded_references
    checks = [KEY_CHECK, *ONCE_CHECKS, VMAP_CHECK]
    verdicts = grader.trusted.verify(checks, {c: seen["transcripts"][c] for c in checks})
    assert {c: str(v.outcome) for c, v in verdicts.items()} == {c: str(Status.PASSED) for c in checks}, verdicts


@pytest.mark.parametrize(
    "module, check, said",
    [
        ("prng", "test_random_walk_uses_each_key_once[6]", "random_walk gives other keys or draws than the reference"),
        ("autodiff", "test_value_and_gradient_calls_f_once[1-D]", "value_and_gradient called f 2 times"),
        ("vmap_linear", "test_batched_linear_is_one_vmap_of_linear[B=8]", "calls linear on one example at a time"),
    ],
)
def test_an_honest_wrong_answer_fails_with_the_trusted_sides_account(graded_references, module, check, said):
    _, _, seen = graded_references
    outcome = {(o.module, o.check): o for o in seen["wrong"].outcomes}[module, check]
    assert outcome.status == Status.FAILED and said in outcome.message, outcome
