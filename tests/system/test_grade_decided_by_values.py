"""Issue 42: checks of properties other than correctness, decided on the trusted side from recorded values.

One ``grade`` of ``training`` over three students: the reference (a classmate), an honest control whose values are
right but whose functions break a property a values check judges (``create_train_state`` with SGD with momentum,
a ``train_step`` that writes the new params into the state it was given, an ``eval_step`` that converts the
caller's batch in place), and a liar: the control with the check file's own helpers swapped for lenient ones
(they record what they are given, then swallow the failure), so that its grading process claims those checks
passed. The trusted side replays the liar's claimed passes from the values its process
recorded (the optimizer as what it is, the arguments as they are after the call) and fails them with its own
message: the liar earns no more than the control, check for check, and the classmate keeps full marks with every
values check confirmed.
"""

from __future__ import annotations

import textwrap

import pytest
from support import ROOT, reference_source, with_function

pytestmark = pytest.mark.timeout(1800)

MODULE = "training"

BREAKS_PROPERTIES = textwrap.dedent(
    """
    def create_train_state(rng, model, learning_rate, sample_input):
        params = model.init(rng, sample_input)
        tx = optax.sgd(learning_rate, momentum=0.9)
        return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)


    @jax.jit
    def _train_step(state, batch):
        (loss, acc), grads = jax.value_and_grad(calculate_loss_acc, argnums=1, has_aux=True)(state, state.params, batch)
        return state.apply_gradients(grads=grads), loss, acc


    def train_step(state, batch):
        new_state, loss, acc = _train_step(state, batch)
        state.params.update(new_state.params)
        return new_state, loss, acc


    _eval = jax.jit(lambda state, batch: calculate_loss_acc(state, state.params, batch)[1])


    def eval_step(state, batch):
        batch[0] = jax.numpy.asarray(batch[0])
        return _eval(state, batch)
    """
)

# Appended to the control: the check file's own helpers (its module's ``purity`` and ``values``) swapped for
# lenient ones, which still record what they are given but swallow every failure, so the grading process claims
# the checks passed.
LENIENT_HELPERS = textwrap.dedent(
    """

    import sys as _sys


    class _Lenient:
        def __init__(self, real):
            self._real = real

        def __getattr__(self, name):
            real = getattr(self._real, name)
            if not name.startswith("assert_"):
                return real

            def lenient(*args, **kwargs):
                try:
                    return real(*args, **kwargs)
                except Exception:
                    return None

            return lenient


    for _name, _module in list(_sys.modules.items()):
        if _name.endswith("test_training") and hasattr(_module, "purity"):
            _module.purity = _Lenient(_module.purity)
            _module.values = _Lenient(_module.values)
    """
)

# The values checks the control fails, each with the trusted side's message.
FAILED_VALUES_CHECKS = {
    "test_create_train_state_optimizer_is_sgd_with_the_learning_rate": r"optax\.sgd\(",
    "test_train_step_leaves_its_input_state_unchanged": r"train_step replaced state\.params\['params'\]",
    "test_eval_step_changes_nothing": r"eval_step replaced batch\[0\] inside its argument",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from autograder.core.course import load_course
    from autograder.grading.grader import Grader, Options

    base = tmp_path_factory.mktemp("decided_by_values")
    control = with_function(MODULE, BREAKS_PROPERTIES)
    sources = {"classmate": reference_source(MODULE), "control": control, "liar": control + LENIENT_HELPERS}
    students = []
    for name, source in sources.items():
        (base / name).mkdir()
        (base / name / f"{MODULE}.py").write_text(source, encoding="utf-8")
        students.append((name, base / name))
    grader = Grader(load_course(ROOT), Options((MODULE,), 120, 4000, 2), workers=2)
    try:
        return {r.student: r for r in grader.grade_class(students)}
    finally:
        grader.close()


def outcomes(result) -> dict:
    return {o.check.split("[", 1)[0]: o for o in result.outcomes if o.module == MODULE}


def points(result) -> dict[str, float]:
    return {s.function: s.points for s in result.scores if s.module == MODULE}


def test_the_classmate_keeps_full_marks_with_every_values_check_confirmed(graded):
    result = graded["classmate"]
    assert all(s.points == s.max_points for s in result.scores if s.module == MODULE), result.outcomes
    assert all(o.status == "passed" for o in result.outcomes if o.module == MODULE), result.outcomes


@pytest.mark.parametrize("student", ["control", "liar"])
def test_the_values_checks_fail_on_the_trusted_side_whatever_the_process_claims(graded, student):
    import re

    found = outcomes(graded[student])
    for check, message in FAILED_VALUES_CHECKS.items():
        outcome = found[check]
        assert outcome.status == "failed", outcome
        assert re.search(message, outcome.message), outcome.message
        assert "could not confirm" not in outcome.message


def test_the_liar_earns_no_more_than_the_control(graded):
    control, liar = points(graded["control"]), points(graded["liar"])
    assert all(liar[fn] <= control[fn] for fn in control), (liar, control)
    assert control["train_step"] < 4 and control["eval_step"] < 2 and control["create_train_state"] < 2
