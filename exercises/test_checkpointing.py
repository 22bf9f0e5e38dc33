"""Checks for module 12, ``checkpointing``: run ``pytest exercises/test_checkpointing.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``. The states are module 5's ``SimpleClassifier`` trained
for a few steps with ``optax.adam`` (so ``opt_state`` holds an int32 count and
float32 moments), made with the reference. Every check writes into its own
temporary directory and lists it before and after: a function may write only
at the path, or into the directory, it was given. Checkpoints written by your
functions are read back with the reference's, and the other way round.
"""

import os
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
import pytest
from flax.training import train_state

from autograder.checks import purity
from autograder.checks import values
from autograder.core.failures import CheckFailure
from autograder.core.oracle import sibling

correctness = pytest.mark.correctness

STATE_FIELDS = ("step", "params", "opt_state")
TMP_SUFFIX = ".orbax-checkpoint-tmp"


# The scenario ---------------------------------------------------------------

@pytest.fixture(scope="module")
def training(reference):
    """Module 5's reference: SimpleClassifier and train_step."""
    return sibling(reference, "training")


@pytest.fixture(scope="module")
def model(training):
    return training.SimpleClassifier(5, 1)


@pytest.fixture(scope="module")
def tx():
    return optax.adam(0.01)


def fresh_state(model, tx, seed):
    """A state at step 0 (a Python int), as TrainState.create makes it: the target of a restore."""
    params = model.init(jax.random.PRNGKey(seed), np.zeros((4, 2), np.float32))
    return train_state.TrainState.create(params=params, tx=tx, apply_fn=model.apply)


@pytest.fixture(scope="module")
def batch():
    rng = np.random.RandomState(0)
    x = rng.normal(size=(16, 2)).astype(np.float32)
    return x, (x.sum(axis=1) > 0).astype(np.int32)


@pytest.fixture(scope="module")
def trained(training, model, tx, batch):
    """Three reference train_steps from a fresh state: step 3 (an int32 array), Adam moments that are not zero."""
    state = fresh_state(model, tx, seed=0)
    for _ in range(3):
        state, _, _ = training.train_step(state, batch)
    return state


@pytest.fixture(scope="module")
def trained_more(training, trained, batch):
    state = trained
    for _ in range(3):
        state, _, _ = training.train_step(state, batch)
    return state


@pytest.fixture
def target(model, tx):
    """A fresh state of the same model and optimizer, with other params: what a restarted program has."""
    return fresh_state(model, tx, seed=1)


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """This check's own directory, also the working directory (so relative writes are seen too)."""
    root = tmp_path / "work"
    (root / "cwd").mkdir(parents=True)
    monkeypatch.chdir(root / "cwd")
    return root


def listing(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def leftovers(root: Path) -> list[str]:
    return sorted(p for p in listing(root) if p.endswith(TMP_SUFFIX) or TMP_SUFFIX + "/" in p)


def assert_written_only_under(root: Path, before: set[str], allowed: str, *, function: str, check: str) -> None:
    outside = sorted(p for p in listing(root) - before if p != allowed and not p.startswith(allowed + "/"))
    if outside:
        shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
        raise CheckFailure(
            check,
            f"{function} wrote outside {allowed!r}: {shown}",
            "write only at the absolute path (or into the directory) you are given: no file beside it, nothing "
            "in the working directory, no path of your own",
        )


def assert_same_state(got, expected, *, check, name="restored"):
    """Exactly the saved values, field by field (atol 0)."""
    values.assert_fields_close(got, expected, STATE_FIELDS, name=name, rtol=0, atol=0, check=check)


def assert_has_structure_of(got, target, *, name, check):
    """``target``'s class, apply_fn, tx and tree structure; its shapes and dtypes leaf for leaf."""
    if type(got) is not type(target):
        raise CheckFailure(
            check,
            f"{name} is a {type(got).__module__}.{type(got).__qualname__}, not a {type(target).__qualname__} like the target",
            "restore against the abstract target, jax.tree.map(ocp.utils.to_shape_dtype_struct, target): without "
            "a target Orbax returns plain dicts",
        )
    if got.apply_fn is not target.apply_fn or got.tx is not target.tx:
        raise CheckFailure(
            check, f"{name}.apply_fn or {name}.tx is not the target's",
            "apply_fn and tx are not saved: they must come from the target you restore into",
        )
    if jax.tree.structure(got) != jax.tree.structure(target):
        raise CheckFailure(
            check, f"{name} does not have the target's tree structure",
            f"expected: {values.describe(target)}\ngot:      {values.describe(got)}",
        )
    for (path, leaf), want in zip(jax.tree_util.tree_leaves_with_path(got), jax.tree.leaves(target)):
        where = name + jax.tree_util.keystr(path)
        if type(want) is int:
            if type(leaf) is not int:
                raise CheckFailure(
                    check, f"{where} is {values.describe(leaf)}, but the target holds a Python int there",
                    "restore against the target's abstract version: a Python int leaf then stays a Python int",
                )
            continue
        if not isinstance(leaf, jax.Array):
            raise CheckFailure(check, f"{where} is a {type(leaf).__name__}, expected a jax.Array like the target's")
        if leaf.shape != want.shape or leaf.dtype != want.dtype:
            raise CheckFailure(
                check,
                f"{where} is {leaf.dtype}{list(leaf.shape)}, but the target has {want.dtype}{list(want.shape)}",
                "the target decides shapes and dtypes: restore against jax.tree.map(ocp.utils.to_shape_dtype_struct, target)",
            )


# save_checkpoint ------------------------------------------------------------

NOT_WAITED = (
    "Orbax saves in the background into <path>.orbax-checkpoint-tmp and renames it when the write is complete; "
    "wait for the asynchronous save before returning (the checkpointer's wait_until_finished method), or use the checkpointer as a context manager (`with ocp.StandardCheckpointer() as c:`)"
)


def test_save_checkpoint_is_complete_on_return(student, trained, workdir):
    path = workdir / "ckpt"
    check = "save_checkpoint returns only when the checkpoint directory is complete under its final name"
    student.save_checkpoint(path, trained)
    if leftovers(workdir):
        raise CheckFailure(check, f"save_checkpoint returned while {leftovers(workdir)[0]} was still being written", NOT_WAITED)
    if not path.is_dir():
        found = sorted(listing(workdir) - {"cwd"})
        raise CheckFailure(
            check, f"after save_checkpoint returned, {path.name!r} is not a directory (found: {found[:4]})",
            "save with ocp.StandardCheckpointer: a checkpoint is a directory at exactly the path you are given",
        )


@correctness
def test_save_checkpoint_is_read_exactly_by_the_reference(student, reference, trained, target, workdir):
    """The Orbax format: the reference's restore_checkpoint reads it back, every value exact."""
    check = "what save_checkpoint writes, the reference's restore_checkpoint reads back exactly"
    for name, state in (("a trained state (step 3)", trained), ("a fresh state (step 0, a Python int)", target)):
        path = workdir / name.split()[1]
        student.save_checkpoint(path, state)
        try:
            restored = reference.restore_checkpoint(path, target)
        except Exception as err:  # noqa: BLE001 - any failure to read is the format's fault
            raise CheckFailure(
                check, f"the reference could not read the checkpoint of {name}: {type(err).__name__}: {str(err)[:200]}",
                "write an Orbax checkpoint with ocp.StandardCheckpointer (not pickle, msgpack or np.save), "
                "and wait until it is finished",
            ) from None
        with values.located(f"saving {name}"):
            assert_same_state(restored, state, check=check)


def test_save_checkpoint_writes_only_under_path(student, trained, workdir):
    before = listing(workdir)
    student.save_checkpoint(workdir / "ckpt", trained)
    assert_written_only_under(
        workdir, before, "ckpt", function="save_checkpoint",
        check="save_checkpoint writes nothing outside the path it is given",
    )


def test_save_checkpoint_leaves_state_unchanged(student, trained, workdir):
    state = purity.fresh_copy(trained)
    purity.assert_pytree_arguments_unchanged(student.save_checkpoint, workdir / "ckpt", state, allow_donation=False)
    assert_same_state(state, trained, name="state", check="save_checkpoint leaves its state argument unchanged")


# restore_checkpoint ---------------------------------------------------------

@pytest.fixture(scope="module")
def saved(reference, trained, tmp_path_factory):
    """The reference's checkpoint of the trained state (read-only for every restore check)."""
    path = tmp_path_factory.mktemp("saved") / "trained"
    reference.save_checkpoint(path, trained)
    return path


@correctness
def test_restore_checkpoint_reads_the_reference_checkpoint_exactly(student, saved, trained, target):
    restored = student.restore_checkpoint(saved, target)
    assert_same_state(
        restored, trained, check="restore_checkpoint returns exactly the step, params and opt_state the reference saved"
    )


def test_restore_checkpoint_has_the_targets_class_and_structure(student, saved, target):
    restored = student.restore_checkpoint(saved, target)
    assert_has_structure_of(
        restored, target, name="restored",
        check="restore_checkpoint returns a state of the target's class, apply_fn, tx, structure, shapes and dtypes",
    )


def test_restore_checkpoint_follows_the_targets_dtypes(student, saved, trained, target):
    """A bfloat16 target gives bfloat16 params, and its Python-int step stays a Python int."""
    bf16 = target.replace(params=jax.tree.map(lambda p: p.astype(jnp.bfloat16), target.params))
    check = "restore_checkpoint into a bfloat16 target gives bfloat16 params holding the saved values"
    restored = student.restore_checkpoint(saved, bf16)
    assert_has_structure_of(restored, bf16, name="restored", check=check)
    expected = trained.replace(params=jax.tree.map(lambda p: p.astype(jnp.bfloat16), trained.params))
    values.assert_fields_close(restored, expected, ("params",), name="restored", rtol=0, atol=0, check=check)


def test_restore_checkpoint_leaves_target_unchanged(student, saved, target):
    before = purity.fresh_copy(target)
    purity.assert_pytree_arguments_unchanged(student.restore_checkpoint, saved, target, allow_donation=False)
    assert_same_state(target, before, name="target", check="restore_checkpoint leaves its target unchanged")


def test_restore_checkpoint_then_train_step_is_bit_identical(student, training, saved, trained, target, batch):
    """Training resumes exactly: one step from the restored state equals one step from the saved one, bit for bit."""
    restored = student.restore_checkpoint(saved, target)
    check = "a train_step from the restored state equals a train_step from the saved state, bit for bit"
    assert_has_structure_of(restored, target, name="restored", check=check)
    got, got_loss, _ = training.train_step(restored, batch)
    expected, expected_loss, _ = training.train_step(trained, batch)
    with values.located("after one train_step"):
        assert_same_state(got, expected, name="new_state", check=check)
        values.assert_trees_close(got_loss, expected_loss, rtol=0, atol=0, name="loss", check=check)


# make_manager ---------------------------------------------------------------

def steps_on_disk(directory: Path) -> list[str]:
    return sorted(os.listdir(directory), key=lambda name: (not name.isdigit(), int(name) if name.isdigit() else 0, name))


def test_make_manager_returns_a_checkpoint_manager(student, workdir):
    manager = student.make_manager(workdir / "run", 2)
    try:
        if not isinstance(manager, ocp.CheckpointManager):
            raise CheckFailure(
                "make_manager returns an ocp.CheckpointManager",
                f"make_manager returned a {type(manager).__module__}.{type(manager).__qualname__}",
                "return ocp.CheckpointManager(directory, options=ocp.CheckpointManagerOptions(max_to_keep=..., create=True))",
            )
    finally:
        getattr(manager, "close", lambda: None)()


@correctness
def test_make_manager_keeps_the_newest_steps(student, reference, trained, workdir):
    directory = workdir / "run"
    check = "a manager from make_manager(directory, 2), after steps 1 to 5 are saved, keeps steps 4 and 5 only"
    manager = student.make_manager(directory, 2)
    try:
        for step in range(1, 6):
            reference.save_to_manager(manager, trained.replace(step=step))
        steps = list(manager.all_steps())
    finally:
        manager.close()
    advice = "pass options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True)"
    if steps != [4, 5]:
        raise CheckFailure(check, f"manager.all_steps() is {steps}, expected [4, 5]", advice)
    if steps_on_disk(directory) != ["4", "5"]:
        raise CheckFailure(check, f"the directory holds {steps_on_disk(directory)}, expected ['4', '5']", advice)


# save_to_manager ------------------------------------------------------------

@correctness
def test_save_to_manager_saves_state_step_completely_and_keeps_the_newest(student, reference, trained, workdir):
    directory = workdir / "run"
    manager = reference.make_manager(directory, 2)
    check = "save_to_manager saves at the state's own step, returns True once that step is on disk, and the manager keeps 2"
    try:
        for step in (3, 7, 9):
            result = student.save_to_manager(manager, trained.replace(step=step))
            with values.located(f"saving a state with step {step}"):
                if result is not True:
                    raise CheckFailure(check, f"save_to_manager returned {result!r}, expected True", "return what manager.save returns")
                if leftovers(directory):
                    raise CheckFailure(check, f"save_to_manager returned while {leftovers(directory)[0]} was still being written",
                                       "call manager.wait_until_finished() after manager.save")
                if not (directory / str(step)).is_dir():
                    raise CheckFailure(
                        check, f"there is no step directory {step!r}: the manager holds steps {list(manager.all_steps())}",
                        "save at int(state.step), the state's own step, not a counter of your own",
                    )
        steps = list(manager.all_steps())
    finally:
        manager.close()
    if steps != [7, 9] or steps_on_disk(directory) != ["7", "9"]:
        raise CheckFailure(check, f"after steps 3, 7 and 9 the manager holds {steps} (on disk {steps_on_disk(directory)}), expected [7, 9]")


def test_save_to_manager_returns_false_for_an_older_step(student, reference, trained, workdir):
    directory = workdir / "run"
    manager = reference.make_manager(directory, 3)
    check = "save_to_manager returns False, and writes nothing, for a step older than the newest saved one"
    try:
        reference.save_to_manager(manager, trained.replace(step=5))
        before = listing(workdir)
        result = student.save_to_manager(manager, trained.replace(step=2))
        if result is not False:
            raise CheckFailure(check, f"save_to_manager returned {result!r}, expected False",
                               "return the bool manager.save returns: False when Orbax declines an older step")
        written = sorted(listing(workdir) - before)
        if written:
            raise CheckFailure(check, f"save_to_manager wrote {written[0]} for the older step 2",
                               "let manager.save decide: it declines an older step and writes nothing")
    finally:
        manager.close()


# restore_latest -------------------------------------------------------------

def test_restore_latest_returns_the_target_itself_when_nothing_was_saved(student, reference, target, workdir):
    manager = reference.make_manager(workdir / "empty", 2)
    try:
        result = student.restore_latest(manager, target)
    finally:
        manager.close()
    if result is not target:
        raise CheckFailure(
            "restore_latest on an empty manager returns the target object itself",
            f"restore_latest returned {values.describe(result)[:120]}, not the very target it was given",
            "when manager.latest_step() is None there is nothing to resume: return target unchanged (the same object)",
        )


@pytest.fixture
def run_dir(reference, trained, trained_more, workdir):
    """A manager's directory where the reference saved steps 3 and 6; the manager is closed, as after a restart."""
    directory = workdir / "run"
    manager = reference.make_manager(directory, 3)
    try:
        reference.save_to_manager(manager, trained)
        reference.save_to_manager(manager, trained_more)
    finally:
        manager.close()
    return directory


@correctness
def test_restore_latest_restores_the_newest_step_exactly(student, reference, trained, trained_more, target, run_dir):
    manager = reference.make_manager(run_dir, 3)
    try:
        check = "restore_latest restores the newest step (6 of 3 and 6) exactly, with the target's structure"
        result = student.restore_latest(manager, target)
        assert_has_structure_of(result, target, name="restored", check=check)
        assert_same_state(result, trained_more, check=check)
    finally:
        manager.close()


def test_restore_latest_works_from_a_new_manager_on_the_same_directory(student, reference, trained, target, run_dir, workdir):
    """Resume after a restart: a first manager saves and closes, a new one opens the directory."""
    manager = reference.make_manager(run_dir, 3)
    try:
        reference.save_to_manager(manager, trained.replace(step=8))
    finally:
        manager.close()
    reopened = reference.make_manager(run_dir, 3)
    try:
        result = student.restore_latest(reopened, target)
        check = "restore_latest from a new manager on the same directory restores its newest step (8)"
        assert_has_structure_of(result, target, name="restored", check=check)
        assert_same_state(result, trained.replace(step=8), check=check)
    finally:
        reopened.close()
