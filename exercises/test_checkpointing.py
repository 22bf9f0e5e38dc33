"""Checks for module 12, ``checkpointing``: run ``pytest exercises/test_checkpointing.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``. The states are module 5's ``SimpleClassifier`` trained
for a few steps with ``optax.adam`` (so ``opt_state`` holds an int32 count and
float32 moments). Every function runs in a directory of its own, listed before
and after: a function may write only at the path, or into the directory, it
was given. What your functions write is kept as data and read back with the
reference's functions, and checkpoints the reference wrote are given to yours;
managers are opened as the contract spells them. (``grade`` judges this module
on its trusted side: its grading processes hold no reference, and the
reference's checkpoints reach them as data.)
"""

import contextlib
import dataclasses
import os
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
import pytest
from flax.training import train_state

from autograder.checks import files, purity, scenario, states, structure, values
from autograder.core.failures import CheckFailure
from autograder.core.oracle import sibling, transformed

correctness = pytest.mark.correctness
decided_by_values = pytest.mark.decided("values")

STATE_FIELDS = ("step", "params", "opt_state")
TMP_SUFFIX = ".orbax-checkpoint-tmp"
TRAINED_SEED, TARGET_SEED = 0, 7  # the target's params are no other module's given either


# The scenario ---------------------------------------------------------------


@pytest.fixture(scope="module")
def model(reference):
    """Module 5's SimpleClassifier (given in that module)."""
    return sibling(reference, "training").SimpleClassifier(5, 1)


@pytest.fixture(scope="module")
def tx():
    return optax.adam(0.01)


def fresh_state(model, tx, seed):
    """A state at step 0 (a Python int), as TrainState.create makes it: the target of a restore."""
    params = model.init(scenario.drawn_key("a given state", seed, "legacy"), np.zeros((4, 2), np.float32))
    return train_state.TrainState.create(params=params, tx=tx, apply_fn=model.apply)


@pytest.fixture(scope="module")
def batch():
    rng = np.random.RandomState(scenario.drawn_seed("checkpointing batch", 0))
    x = rng.normal(size=(16, 2)).astype(np.float32)
    return x, (x.sum(axis=1) > 0).astype(np.int32)


@jax.jit
def adam_step(state, batch):
    """One step of the state's optimizer on a squared error of the logits (a training step of the checks' own)."""
    inputs, targets = batch
    grads = jax.grad(lambda params: jnp.mean((state.apply_fn(params, inputs)[:, 0] - targets) ** 2))(state.params)
    return state.apply_gradients(grads=grads)


def steps_from(state, batch, n):
    for _ in range(n):
        state = adam_step(state, batch)
    return state


@pytest.fixture(scope="module")
def trained(model, tx, batch):
    """Three steps from a fresh state: step 3 (an int32 array), Adam moments that are not zero."""
    return steps_from(fresh_state(model, tx, seed=TRAINED_SEED), batch, 3)


@pytest.fixture(scope="module")
def trained_more(trained, batch):
    return steps_from(trained, batch, 3)


@pytest.fixture
def target(model, tx):
    """A fresh state of the same model and optimizer, with other params: what a restarted program has."""
    return fresh_state(model, tx, seed=TARGET_SEED)


@pytest.fixture(autouse=True)
def workdir(tmp_path, monkeypatch):
    """Every check's own directory, also its working directory (so relative writes are seen too, and a function
    that writes where it should not writes there)."""
    root = tmp_path / "work"
    (root / "cwd").mkdir(parents=True)
    monkeypatch.chdir(root / "cwd")
    return root


def a_manager(directory, max_to_keep):
    """A manager of ``directory`` as the contract spells it (the checks' own, not make_manager's)."""
    return ocp.CheckpointManager(directory, options=ocp.CheckpointManagerOptions(create=True, max_to_keep=max_to_keep))


def save_into(manager, state):
    """Save ``state`` at its own step and wait for it (the checks' own save, not save_to_manager's)."""
    step = int(state.step)
    manager.save(step, args=ocp.args.StandardSave(state))
    manager.wait_until_finished()


# What a function wrote, as data (the trusted side reads it with the reference) -------------------------


def files_written_by(save):
    """``save(path, state)`` at a new path: the files it wrote there."""

    def written(state):
        with files.new_directory() as directory:
            try:
                save(directory / "ckpt", state)
            except Exception as err:
                if not lost_its_folder(err):
                    raise
                return {}  # an earlier save of the same checkpointer, never waited for, failed: nothing was written
            try:
                return files.snapshot(directory / "ckpt")
            finally:
                settled(directory)

    return written


def read_with(restore):
    """``restore(path, target)`` of a checkpoint given as files."""

    def restored(checkpoint, target):
        with files.new_directory() as directory:
            return restore(files.materialise(checkpoint, directory / "ckpt"), target)

    return restored


def run_saved_by(save_to_manager):
    """A manager's directory (it keeps 3) after ``save_to_manager`` saved each of ``states`` and it was closed,
    as after a restart: its files."""

    def run(states):
        with files.new_directory() as directory:
            manager = a_manager(directory / "run", 3)
            try:
                for state in states:
                    save_to_manager(manager, state)
            finally:
                manager.close()
            return files.snapshot(directory / "run")

    return run


def restored_from_run(restore_latest):
    """``restore_latest`` with a new manager (it keeps 3) of a run given as files."""

    def restored(run, target):
        with files.new_directory() as directory:
            manager = a_manager(files.materialise(run, directory / "run"), 3)
            try:
                return restore_latest(manager, target)
            finally:
                manager.close()

    return restored


def unfinished(paths) -> list[str]:
    """The paths that are (or lie under) a save's temporary folder, sorted."""
    return sorted(p for p in paths if p.endswith(TMP_SUFFIX) or TMP_SUFFIX + "/" in p)


def leftovers(root: Path) -> list[str]:
    return unfinished(files.listing(root))


def appeared_after(directory: Path, names: list[str]) -> list[str]:
    """When nothing was at ``ckpt`` as the save returned (``names``): the save's folders (``ckpt``, or its temporary
    one) that appear in ``directory`` within a second after, sorted: a save still starting in the background when it
    returned (the race a loaded machine can end this way). Else, or when none appears: []."""
    if "ckpt" in names or "ckpt" + TMP_SUFFIX in names:
        return []
    for _ in range(50):
        later = sorted(n for n in os.listdir(directory) if n in ("ckpt", "ckpt" + TMP_SUFFIX))
        if later:
            return later
        time.sleep(0.02)
    return []


def settled(directory: Path) -> None:
    """Wait (30 s at most) for a save left running in the background under ``directory`` to finish, before the
    folder goes: a folder removed under a running write makes that write fail, and the checkpointer's next save
    raises its error."""
    for _ in range(600):
        if not leftovers(directory):
            return
        time.sleep(0.05)


def lost_its_folder(err: BaseException) -> bool:
    """Whether a save raised because a save of the same checkpointer, left running in the background, found its
    temporary folder gone (Orbax raises a background write's error from the next save)."""
    return TMP_SUFFIX in str(err)


def assert_same_state(got, expected, *, check, name="restored"):
    """Exactly the saved values, field by field (atol 0)."""
    states.assert_fields_close(got, expected, STATE_FIELDS, name=name, rtol=0, atol=0, check=check)


# A state the trusted side replays has its static fields made from what they are (the model's apply, the optimizer
# and its learning rate), shared with every state of an equal model and optimizer it saw: they are judged the same
# by what they are, not only as the same objects.


def same_apply(got, want) -> bool:
    """The same method of an equal model: a model of the same class name and fields (a bound method's model
    compares by identity in ``==``, and a replayed model's class may be another copy of the course's class)."""
    if got is want or got == want:
        return True
    func, owner, other = getattr(got, "__func__", None), getattr(got, "__self__", None), getattr(want, "__self__", None)
    if func is None or getattr(func, "__name__", None) != getattr(getattr(want, "__func__", None), "__name__", ""):
        return False
    if owner is None or other is None or type(owner).__qualname__ != type(other).__qualname__:
        return False
    if not (dataclasses.is_dataclass(owner) and dataclasses.is_dataclass(other)):
        return owner == other
    fields = [f.name for f in dataclasses.fields(owner) if f.name not in ("parent", "name")]
    return fields == [f.name for f in dataclasses.fields(other) if f.name not in ("parent", "name")] and all(
        getattr(owner, name) == getattr(other, name) for name in fields
    )


def same_optimizer(got, want) -> bool:
    """The same optimizer object, or one that makes the same updates, bit for bit, from the same gradients."""
    if got is want or got == want:
        return True
    params = {"w": np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)}
    try:
        states = [got.init(params), want.init(params)]
        for scale in (1.0, -0.5, 2.0):
            grads = jax.tree.map(lambda p, s=scale: np.cos(p * s).astype(np.float32), params)
            (a, states[0]), (b, states[1]) = got.update(grads, states[0], params), want.update(grads, states[1], params)
            if not np.array_equal(np.asarray(a["w"]), np.asarray(b["w"])):
                return False
    except Exception:  # noqa: BLE001 - not an optimizer
        return False
    return True


def assert_has_structure_of(got, target, *, name, check):
    """``target``'s class, apply_fn, tx and tree structure; its shapes and dtypes leaf for leaf."""
    if type(got) is not type(target):
        raise CheckFailure(
            check,
            f"{name} is a {type(got).__module__}.{type(got).__qualname__}, not a {type(target).__qualname__} like the target",
            "restore against the abstract target, jax.tree.map(ocp.utils.to_shape_dtype_struct, target): without "
            "a target Orbax returns plain dicts",
        )
    if not (same_apply(got.apply_fn, target.apply_fn) and same_optimizer(got.tx, target.tx)):
        raise CheckFailure(
            check,
            f"{name}.apply_fn or {name}.tx is not the target's",
            "apply_fn and tx are not saved: they must come from the target you restore into",
        )
    # (a state's tree structure holds its static fields, judged above: the target's stand in for them)
    if jax.tree.structure(got.replace(apply_fn=target.apply_fn, tx=target.tx)) != jax.tree.structure(target):
        raise CheckFailure(
            check,
            f"{name} does not have the target's tree structure",
            f"expected: {values.describe(target)}\ngot:      {values.describe(got)}",
        )
    for (path, leaf), want in zip(jax.tree_util.tree_leaves_with_path(got), jax.tree.leaves(target)):
        where = name + jax.tree_util.keystr(path)
        if type(want) is int:
            if type(leaf) is not int:
                raise CheckFailure(
                    check,
                    f"{where} is {values.describe(leaf)}, but the target holds a Python int there",
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
NOT_ORBAX = "write an Orbax checkpoint with ocp.StandardCheckpointer (not pickle, msgpack or np.save), and wait until it is finished"


def what_it_holds(checkpoint):
    """Every array of a checkpoint given as files, read with Orbax as it was saved (no target: nested dicts), or
    why it cannot be read."""
    try:
        with files.new_directory() as directory:
            with ocp.StandardCheckpointer() as reader:
                return reader.restore(files.materialise(checkpoint, directory / "ckpt"))
    except Exception as err:  # noqa: BLE001 - any failure to read is the checkpoint's
        return Unreadable(f"{type(err).__name__}: {files.without_scratch_paths(str(err))[:200]}")


class Unreadable:
    """A checkpoint Orbax could not read, and why."""

    def __init__(self, why: str):
        self.why = why


@pytest.fixture(scope="module")
def to_save(trained, batch):
    """A state no checkpoint the checks are given holds: step 4, Adam moments that are not zero."""
    return steps_from(trained, batch, 1)


def recorded(found, keys, check):
    """``found`` (what a transform of the checks recorded, as the trusted side replays it), if it holds ``keys``."""
    if not (isinstance(found, dict) and set(keys) <= set(found)):
        raise CheckFailure(check, "what the function did was not recorded as data", NOT_ORBAX)
    return found


def saved_on_return(save):
    """``save(path, state)`` at a new path, the working directory ``cwd`` beside it: the names in the folder right
    when it returned, and then all of its files (what is still being written included; a save still running in the
    background may remove some while they are read: then the names only), what it returned, and the state as it
    is after the call. Recorded as values: the trusted side judges the save's checks from them. A save left running
    is waited for (a while) before the folder goes, so that the next save of the same checkpointer starts clean; a
    save that raised because an earlier one, never waited for, lost its folder is recorded as that
    (``earlier_unfinished``), whichever way the race with Orbax's background writer went."""

    def saved(state):
        with tempfile.TemporaryDirectory(prefix="check-", ignore_cleanup_errors=True) as tmp:
            directory = Path(tmp).resolve()
            (directory / "cwd").mkdir()
            with contextlib.chdir(directory / "cwd"):
                try:
                    returned = save(directory / "ckpt", state)
                except Exception as err:
                    if not lost_its_folder(err):
                        raise
                    return {
                        "names": [],
                        "files": {},
                        "returned": None,
                        "state": purity.as_after_the_call(state),
                        "earlier_unfinished": True,
                    }
                names = sorted(os.listdir(directory))
                try:
                    on_return = files.snapshot(directory)
                except (OSError, files.UnsafeFiles):
                    on_return = None
                later = appeared_after(directory, names)
            settled(directory)
            return {
                "names": names,
                "files": on_return,
                "returned": None if returned is None else values.describe(returned)[:120],
                "state": purity.as_after_the_call(state),
                "appeared_after": later,
            }

    return saved


def save_on_return(student, state):
    """The student's save_checkpoint of ``state`` (a copy), as :func:`saved_on_return` records it."""
    found = structure.transformed_once(student.save_checkpoint, "on return", saved_on_return)(purity.fresh_copy(state))
    if not (isinstance(found, dict) and {"names", "files", "returned", "state"} <= set(found)):
        raise CheckFailure(
            "save_checkpoint writes a checkpoint", "what save_checkpoint wrote was not recorded as data", NOT_ORBAX
        )
    return found


def written_on_return(found):
    """The folder's files when the save returned (:func:`saved_on_return`), or its names (as folders) when its
    files could not all be read."""
    if isinstance(found["files"], dict):
        return found["files"]
    return {name: None for name in found["names"]}


@decided_by_values
def test_save_checkpoint_is_complete_on_return(student, to_save):
    """Judged from the folder's files right when save_checkpoint returned (recorded as values)."""
    check = "save_checkpoint returns only when the checkpoint directory is complete under its final name"
    found = save_on_return(student, to_save)
    if found.get("earlier_unfinished"):
        raise CheckFailure(
            check,
            f"save_checkpoint returned while ckpt{TMP_SUFFIX} was still being written (its next save found that "
            "folder gone and failed)",
            NOT_WAITED,
        )
    written = written_on_return(found)
    still_written = unfinished(written)
    if still_written:
        raise CheckFailure(
            check, f"save_checkpoint returned while {still_written[0]} was still being written", NOT_WAITED
        )
    later = found.get("appeared_after")
    later = [name for name in later if isinstance(name, str)] if isinstance(later, list) else []
    if later and "ckpt" not in written:
        raise CheckFailure(
            check,
            f"save_checkpoint returned while ckpt{TMP_SUFFIX} was still being written (nothing was at 'ckpt' when "
            f"it returned; {later[0][:60]!r} appeared after)",
            NOT_WAITED,
        )
    if "ckpt" not in written or written["ckpt"] is not None:
        shown = sorted(p for p in written if p != "cwd")
        raise CheckFailure(
            check,
            f"after save_checkpoint returned, 'ckpt' is not a directory (found: {shown[:4]})",
            "save with ocp.StandardCheckpointer: a checkpoint is a directory at exactly the path you are given",
        )
    if found["returned"] is not None:
        raise CheckFailure(
            "save_checkpoint returns None",
            f"save_checkpoint returned {found['returned']}, expected None",
            "the contract's save_checkpoint returns nothing (unlike flax.training.checkpoints.save_checkpoint, which "
            "returns the path): end the function without a return value",
        )


@correctness
def test_save_checkpoint_is_read_exactly_by_the_reference(student, reference, to_save, target):
    """The Orbax format: what you wrote holds what the reference's checkpoint of the same state holds, read the
    same way (Orbax, as saved), every value exact; so the reference's restore_checkpoint reads it back exactly."""
    check = "what save_checkpoint writes, the reference's restore_checkpoint reads back exactly"
    written = structure.transformed_once(student.save_checkpoint, "files written", files_written_by)
    for name, state in (("a trained state (step 4)", to_save), ("a fresh state (step 0, a Python int)", target)):
        got = what_it_holds(written(state))
        expected = what_it_holds(transformed(reference, "save_checkpoint", "files written", files_written_by)(state))
        with values.located(f"saving {name}"):
            if isinstance(got, Unreadable) and not isinstance(expected, Unreadable):
                raise CheckFailure(check, f"Orbax could not read the checkpoint it wrote: {got.why}", NOT_ORBAX)
            if not isinstance(got, Unreadable):
                values.assert_trees_close(got, expected, rtol=0, atol=0, name="the checkpoint", check=check)


@decided_by_values
def test_save_checkpoint_writes_only_under_path(student, to_save):
    """Judged from the folder's files right when save_checkpoint returned (recorded as values): the path it was
    given, and the working directory beside it. Orbax's own temporary folder of the path (``ckpt`` + TMP_SUFFIX,
    renamed to ``ckpt`` when the write is complete) is the save of ``ckpt``, not a write beside it: whether it was
    still there when the save returned (a race with Orbax's background writer) is for
    ``test_save_checkpoint_is_complete_on_return`` to say, so this check's verdict never depends on that race."""
    written = written_on_return(save_on_return(student, to_save))
    saving = "ckpt" + TMP_SUFFIX
    ours = ("cwd", "ckpt", saving)
    outside = sorted(p for p in written if p not in ours and not p.startswith(("ckpt/", saving + "/")))
    if outside:
        shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
        raise CheckFailure(
            "save_checkpoint writes nothing outside the path it is given",
            f"save_checkpoint wrote outside 'ckpt': {shown}",
            "write only at the absolute path (or into the directory) you are given: no file beside it, nothing "
            "in the working directory, no path of your own",
        )


@decided_by_values
def test_save_checkpoint_leaves_state_unchanged(student, to_save):
    """Judged from the state as it is after the call (recorded as values)."""
    after = save_on_return(student, to_save)["state"]
    purity.assert_as_before("save_checkpoint", [to_save], [after], names=("state",), allow_donation=False)
    assert_same_state(after, to_save, name="state", check="save_checkpoint leaves its state argument unchanged")


# restore_checkpoint ---------------------------------------------------------


@pytest.fixture(scope="module")
def saved(reference, trained):
    """The reference's checkpoint of the trained state, as files (given to every restore check)."""
    return transformed(reference, "save_checkpoint", "files written", files_written_by)(trained)


@pytest.fixture
def saved_path(saved, tmp_path):
    """The reference's checkpoint on disk, in this check's own directory."""
    return files.materialise(saved, tmp_path / "saved" / "trained")


@correctness
def test_restore_checkpoint_reads_the_reference_checkpoint_exactly(student, reference, saved, target):
    check = "restore_checkpoint returns exactly the step, params and opt_state the reference saved"
    restored = structure.transformed_once(student.restore_checkpoint, "from files", read_with)(saved, target)
    expected = transformed(reference, "restore_checkpoint", "from files", read_with)(saved, target)
    assert_same_state(restored, expected, check=check)


@decided_by_values
def test_restore_checkpoint_has_the_targets_class_and_structure(student, saved, target):
    restored = structure.transformed_once(student.restore_checkpoint, "from files", read_with)(saved, target)
    assert_has_structure_of(
        restored,
        target,
        name="restored",
        check="restore_checkpoint returns a state of the target's class, apply_fn, tx, structure, shapes and dtypes",
    )


def in_bfloat16(state):
    """``state`` with its params cast to bfloat16 (its step and opt_state as they are)."""
    return state.replace(params=jax.tree.map(lambda p: p.astype(jnp.bfloat16), state.params))


def as_data_with_dtypes(restored):
    """A restored state as data (bfloat16 is not): ``(its leaves' dtypes and shapes, e.g. ``bfloat16[5]``, or their
    types where they have none, by path; the state with every bfloat16 leaf as float32)``. Any bfloat16 value is a
    float32 value exactly."""

    def kind(leaf):
        return f"{leaf.dtype}{list(leaf.shape)}" if hasattr(leaf, "dtype") else type(leaf).__name__

    kinds = [(jax.tree_util.keystr(path), kind(leaf)) for path, leaf in jax.tree_util.tree_leaves_with_path(restored)]
    widened = jax.tree.map(
        lambda leaf: leaf.astype(jnp.float32) if getattr(leaf, "dtype", None) == jnp.bfloat16 else leaf, restored
    )
    return kinds, widened


def into_bfloat16(restore, where):
    """``restore(<where>, target)`` into ``target`` with its params cast to bfloat16 (:func:`in_bfloat16`), of
    files given as data (a checkpoint, or a manager's run when ``where`` is ``"run"``): what it returns as
    :func:`as_data_with_dtypes` gives it."""

    def restored(files_given, target):
        with files.new_directory() as directory:
            if where == "run":
                manager = a_manager(files.materialise(files_given, directory / "run"), 3)
                try:
                    return as_data_with_dtypes(restore(manager, in_bfloat16(target)))
                finally:
                    manager.close()
            return as_data_with_dtypes(restore(files.materialise(files_given, directory / "ckpt"), in_bfloat16(target)))

    return restored


def assert_follows_the_targets_dtypes(got, target, saved_state, *, check):
    """``got`` (:func:`as_data_with_dtypes` of what was restored into ``in_bfloat16(target)``) has the bfloat16
    target's class, structure, dtypes leaf for leaf (a Python-int step stays a Python int), and ``saved_state``'s
    params in bfloat16."""
    if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], list)):
        raise CheckFailure(check, "what was restored could not be recorded as data", "return the restored state")
    kinds, widened = got
    assert_has_structure_of(widened, target, name="restored", check=check)
    expected_kinds, _ = as_data_with_dtypes(in_bfloat16(target))
    for (path, kind), (_, want) in zip(kinds, expected_kinds):
        if kind != want:
            raise CheckFailure(
                check,
                f"restored{path} is {kind}, but the target has {want}",
                "the target decides dtypes: restore against jax.tree.map(ocp.utils.to_shape_dtype_struct, target)",
            )
    _, expected = as_data_with_dtypes(in_bfloat16(saved_state))
    states.assert_fields_close(widened, expected, ("params",), name="restored", rtol=0, atol=0, check=check)


@decided_by_values
def test_restore_checkpoint_follows_the_targets_dtypes(student, saved, trained, target):
    """A bfloat16 target gives bfloat16 params holding the saved values, and its Python-int step stays a Python int:
    decided from the restored state recorded as data (its dtypes beside it)."""
    got = structure.transformed_once(
        student.restore_checkpoint, "into bfloat16", lambda restore: into_bfloat16(restore, "checkpoint")
    )(saved, target)
    assert_follows_the_targets_dtypes(
        got,
        target,
        trained,
        check="restore_checkpoint into a bfloat16 target gives bfloat16 params holding the saved values",
    )


def target_after(restore):
    """``restore(path, target)`` of a checkpoint given as files: the target as it is after the call."""

    def restored(checkpoint, target):
        with files.new_directory() as directory:
            restore(files.materialise(checkpoint, directory / "ckpt"), target)
            return purity.as_after_the_call(target)

    return restored


@decided_by_values
def test_restore_checkpoint_leaves_target_unchanged(student, saved, target):
    """Judged from the target as it is after the call (recorded as values)."""
    before = purity.fresh_copy(target)
    after = structure.transformed_once(student.restore_checkpoint, "target after", target_after)(saved, target)
    purity.assert_as_before("restore_checkpoint", [before], [after], names=("target",), allow_donation=False)
    assert_same_state(after, before, name="target", check="restore_checkpoint leaves its target unchanged")


@decided_by_values
def test_restore_checkpoint_then_a_training_step_is_bit_identical(student, saved, trained, target, batch):
    """Training resumes exactly: one step from the restored state equals one step from the saved one, bit for bit."""
    restored = structure.transformed_once(student.restore_checkpoint, "from files", read_with)(saved, target)
    check = "a training step from the restored state equals a training step from the saved state, bit for bit"
    assert_has_structure_of(restored, target, name="restored", check=check)
    with values.located("after one training step"):
        assert_same_state(adam_step(restored, batch), adam_step(trained, batch), name="new_state", check=check)


# make_manager ---------------------------------------------------------------


def kind_made_by(make_manager):
    """``make_manager(directory, max_to_keep)`` in a new directory, as data: the classes its result is an instance
    of (module and name of each class of its type's method resolution order)."""

    def made(max_to_keep):
        with files.new_directory() as directory:
            manager = make_manager(directory / "run", max_to_keep)
            try:
                return [f"{kind.__module__}.{kind.__qualname__}" for kind in type(manager).__mro__]
            finally:
                getattr(manager, "close", lambda: None)()

    return made


@decided_by_values
def test_make_manager_returns_a_checkpoint_manager(student):
    """Decided from the classes of what it returns (recorded as data)."""
    kinds = structure.transformed_once(student.make_manager, "kind made", kind_made_by)(3)
    manager = f"{ocp.CheckpointManager.__module__}.{ocp.CheckpointManager.__qualname__}"
    if not (isinstance(kinds, list) and manager in kinds):
        raise CheckFailure(
            "make_manager returns an ocp.CheckpointManager",
            f"make_manager returned a {kinds[0] if isinstance(kinds, list) and kinds else 'value'}",
            "return ocp.CheckpointManager(directory, options=ocp.CheckpointManagerOptions(max_to_keep=..., create=True))",
        )


def directory_made_by(make_manager):
    """``make_manager(directory, max_to_keep)`` on a directory that does not exist yet: the files of the folder
    around it when it returns (before anything is saved), recorded as values."""

    def made(max_to_keep):
        with files.new_directory() as directory:
            manager = make_manager(directory / "run", max_to_keep)
            try:
                return {"files": files.snapshot(directory)}
            finally:
                getattr(manager, "close", lambda: None)()

    return made


@decided_by_values
def test_make_manager_creates_its_directory(student):
    """Judged from the folder's files when make_manager returned (recorded as values)."""
    check = "make_manager(directory, max_to_keep) on a directory that does not exist yet creates it"
    found = recorded(
        structure.transformed_once(student.make_manager, "creates a new directory", directory_made_by)(2),
        ("files",),
        check,
    )
    if not (isinstance(found["files"], dict) and "run" in found["files"] and found["files"]["run"] is None):
        raise CheckFailure(
            check,
            "after make_manager returned, the directory does not exist",
            "a training run's first manager is made before anything is saved (restore_latest looks in it first): "
            "options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True)",
        )


KEEP_COUNTS = (1, 2, 3)  # max_to_keep takes several values: a hard-coded count fails


def keep_steps():
    """The steps the make_manager scenario saves: 1 to 4, or the instructor's under --seed."""
    return scenario.saved_steps("make_manager keeps the newest", (1, 2, 3, 4), 2)[0]


def steps_kept_by(make_manager):
    """For each ``max_to_keep`` of KEEP_COUNTS, a manager from ``make_manager(directory, max_to_keep)`` of a new
    directory after the scenario's steps (:func:`keep_steps`) were saved into it: its steps, and the entries of
    its directory."""
    KEEP_STEPS = keep_steps()

    def kept(state):
        runs = []
        for max_to_keep in KEEP_COUNTS:
            with files.new_directory() as directory:
                manager = make_manager(directory / "run", max_to_keep)
                try:
                    for step in KEEP_STEPS:
                        save_into(manager, state.replace(step=step))
                    runs.append((max_to_keep, list(manager.all_steps()), files.numbered_entries(directory / "run")))
                finally:
                    manager.close()
        return runs

    return kept


@correctness
def test_make_manager_keeps_the_newest_steps(student, trained):
    KEEP_STEPS = keep_steps()
    runs = structure.transformed_once(student.make_manager, f"keeps k of steps {list(KEEP_STEPS)}", steps_kept_by)(
        trained
    )
    advice = (
        "pass the max_to_keep you are given on: options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, "
        "create=True)"
    )
    for max_to_keep, steps, on_disk in runs:
        newest = list(KEEP_STEPS[-max_to_keep:])
        check = (
            f"a manager from make_manager(directory, {max_to_keep}), after steps {list(KEEP_STEPS)} are saved, keeps steps "
            f"{newest} only"
        )
        if list(steps) != newest:
            raise CheckFailure(check, f"manager.all_steps() is {list(steps)}, expected {newest}", advice)
        if list(on_disk) != [str(s) for s in newest]:
            raise CheckFailure(
                check, f"the directory holds {list(on_disk)}, expected {[str(s) for s in newest]}", advice
            )


# save_to_manager ------------------------------------------------------------


def saved_scenario():
    """``(steps, keep)``: step 0 (a step: saved, and True), then 3, 7 and 9 (or the instructor's steps under
    --seed), saved into a manager that keeps ``keep`` (2, or the instructor's)."""
    later, keep = scenario.saved_steps("save_to_manager keeps the newest", (3, 7, 9), 2)
    return (0, *later), keep


def saves_by(save_to_manager):
    """The scenario's steps saved with ``save_to_manager`` into a new manager that keeps its count: for each save, what it
    returned, what was still being written when it returned, and the steps then on disk; and the steps kept."""
    SAVED_STEPS, keep = saved_scenario()

    def saves(state):
        with files.new_directory() as directory:
            manager = a_manager(directory / "run", keep)
            try:
                record = []
                for step in SAVED_STEPS:
                    result = save_to_manager(manager, state.replace(step=step))
                    unfinished_then = leftovers(directory / "run")
                    on_disk = files.numbered_entries(directory / "run")
                    record.append(
                        {
                            "step": step,
                            "returned": result if isinstance(result, bool) else repr(result)[:80],
                            "unfinished": unfinished_then,
                            "on_disk": on_disk,
                            "appeared_after": []
                            if unfinished_then or str(step) in on_disk
                            else step_appeared_after(manager, directory / "run", step),
                        }
                    )
                kept = list(manager.all_steps())
                return record, kept, [read_back(directory / "run" / str(step), state) for step in kept]
            finally:
                manager.close()

    return saves


def step_appeared_after(manager, run: Path, step: int) -> list[str]:
    """When nothing was at ``step`` as save_to_manager returned: the step's folders (``<step>``, or its temporary
    one) that appear after, sorted (a save still starting in the background when it returned), watched for 0.3 s,
    and up to a second while the manager says it is saving. Else, or when none appears: []."""
    in_progress = getattr(manager, "is_saving_in_progress", lambda: True)
    for tick in range(50):
        later = sorted(n for n in os.listdir(run) if n in (str(step), f"{step}{TMP_SUFFIX}"))
        if later:
            return later
        if tick >= 15 and not in_progress():
            return []
        time.sleep(0.02)
    return []


def read_back(step_directory, state):
    """The leaves a manager's step directory holds, read with Orbax into ``state``'s structure (the checks' own
    read), or why it cannot be read so."""
    try:
        with ocp.StandardCheckpointer() as reader:
            restored = reader.restore(step_directory / "default", jax.tree.map(ocp.utils.to_shape_dtype_struct, state))
        return [np.asarray(leaf) for leaf in jax.tree.leaves(restored)]
    except Exception as err:  # noqa: BLE001 - any failure to read is the checkpoint's
        return f"{type(err).__name__}: {files.without_scratch_paths(str(err))[:200]}"


@correctness
def test_save_to_manager_saves_state_step_completely_and_keeps_the_newest(student, trained):
    saved, keep = saved_scenario()
    check = f"save_to_manager saves at the state's own step, returns True once that step is on disk, and the manager keeps {keep}"
    record, kept, holds = structure.transformed_once(
        student.save_to_manager, f"steps {list(saved)}, keeping {keep}", saves_by
    )(trained)
    for save in record:
        with values.located(f"saving a state with step {save['step']}"):
            if save["returned"] is not True:  # a bool, or the repr of what else it returned
                raise CheckFailure(
                    check,
                    f"save_to_manager returned {save['returned']}, expected True",
                    "return what manager.save returns",
                )
            if save["unfinished"]:
                raise CheckFailure(
                    check,
                    f"save_to_manager returned while {save['unfinished'][0]} was still being written",
                    "call manager.wait_until_finished() after manager.save",
                )
            later = save.get("appeared_after")
            later = [name for name in later if isinstance(name, str)] if isinstance(later, list) else []
            if later:
                raise CheckFailure(
                    check,
                    f"save_to_manager returned while {save['step']}{TMP_SUFFIX} was still being written (nothing "
                    f"was at step {save['step']} when it returned; {later[0][:60]!r} appeared after)",
                    "call manager.wait_until_finished() after manager.save",
                )
            if str(save["step"]) not in save["on_disk"]:
                raise CheckFailure(
                    check,
                    f"there is no step directory {save['step']}: the directory holds {list(save['on_disk'])}",
                    "save at int(state.step), the state's own step, not a counter of your own",
                )
    on_disk = record[-1]["on_disk"]
    want = list(saved[-keep:])
    if list(kept) != want or list(on_disk) != [str(s) for s in want]:
        raise CheckFailure(
            check,
            f"after steps {list(saved)} the manager holds {list(kept)} (on disk {list(on_disk)}), expected {want}",
        )
    read_check = (
        "what save_to_manager saved at each step reads back as the whole state (step, params, opt_state), exactly"
    )
    for step, held in zip(kept, holds):
        with values.located(f"reading back step {step}"):
            if isinstance(held, str):
                raise CheckFailure(
                    read_check,
                    f"step {step} cannot be read back as a TrainState: {held}",
                    "save the whole state, manager.save(step, args=ocp.args.StandardSave(state)): not state.params "
                    "or a part of it",
                )
            expected = [
                np.asarray(leaf) for leaf in jax.tree.leaves(trained.replace(step=jnp.asarray(step, jnp.int32)))
            ]
            values.assert_trees_close(
                list(held),
                expected,
                rtol=0,
                atol=0,
                name="the saved state's leaves",
                check=read_check,
                source="the state you were given",
            )


def saves_an_older_step(save_to_manager):
    """A manager (it keeps 3) that saved ``state`` at step 5, then ``save_to_manager`` of it at step 2: what it
    returned, and the manager's folder before and after that save (recorded as values)."""

    def saves(state):
        with files.new_directory() as directory:
            (directory / "cwd").mkdir()
            manager = a_manager(directory / "run", 3)
            try:
                save_into(manager, state.replace(step=5))
                before = files.snapshot(directory)
                with contextlib.chdir(directory / "cwd"):
                    result = save_to_manager(manager, state.replace(step=2))
                return {
                    "returned": result if isinstance(result, bool) else repr(result)[:80],
                    "before": before,
                    "after": files.snapshot(directory),
                }
            finally:
                manager.close()

    return saves


@decided_by_values
def test_save_to_manager_returns_false_for_an_older_step(student, trained):
    """Judged from what it returned and the folder's files before and after (recorded as values)."""
    check = "save_to_manager returns False, and writes nothing, for a step older than the newest saved one"
    found = recorded(
        structure.transformed_once(student.save_to_manager, "an older step", saves_an_older_step)(trained),
        ("returned", "before", "after"),
        check,
    )
    if found["returned"] is not False:
        raise CheckFailure(
            check,
            f"save_to_manager returned {found['returned']}, expected False",
            "return the bool manager.save returns: False when Orbax declines an older step",
        )
    written = sorted(set(found["after"]) - set(found["before"]))
    if written:
        raise CheckFailure(
            check,
            f"save_to_manager wrote {written[0]} for the older step 2",
            "let manager.save decide: it declines an older step and writes nothing",
        )


def same_files(a, b) -> bool:
    return a.keys() == b.keys() and all(
        (a[k] is None and b[k] is None) or (a[k] is not None and b[k] is not None and np.array_equal(a[k], b[k]))
        for k in a
    )


def saves_a_step_that_exists(save_to_manager):
    """A manager (it keeps 3) that saved ``state`` at step 0, then ``save_to_manager`` of it at step 0 again, with the
    same manager and with a new one on the same folder: for each, what it returned (or raised), and the manager's
    folder before and after (recorded as values)."""

    def saves(state):
        with files.new_directory() as directory:
            run = directory / "run"
            manager = a_manager(run, 3)
            tries = []
            try:
                save_into(manager, state.replace(step=0))
                for opened in ("the same manager", "a new manager"):
                    if opened == "a new manager":
                        manager.close()
                        manager = a_manager(run, 3)
                    before = files.snapshot(run)
                    try:
                        result = save_to_manager(manager, state.replace(step=0))
                    except Exception as err:  # noqa: BLE001 - reported with its type
                        tries.append({"opened": opened, "raised": f"{type(err).__name__}: {str(err)[:160]}"})
                        break
                    returned = result if isinstance(result, bool) else repr(result)[:80]
                    tries.append(
                        {"opened": opened, "returned": returned, "before": before, "after": files.snapshot(run)}
                    )
            finally:
                manager.close()
            return {"tries": tries}

    return saves


@decided_by_values
def test_save_to_manager_returns_false_for_a_step_that_exists(student, trained):
    """orbax-checkpoint 0.12.8 declines a step that already exists (False, nothing written), from the same manager
    and from a new one; only force=True makes it raise StepAlreadyExistsError. Judged from what it returned and the
    folder's files before and after (recorded as values)."""
    check = "save_to_manager returns False, and writes nothing, for a step that is already saved"
    found = recorded(
        structure.transformed_once(student.save_to_manager, "a step that exists", saves_a_step_that_exists)(trained),
        ("tries",),
        check,
    )
    tries = found["tries"]
    if not (isinstance(tries, list) and tries and (len(tries) == 2 or "raised" in tries[-1])):
        raise CheckFailure(check, "what save_to_manager did was not recorded as data", NOT_ORBAX)
    for tried in tries:
        opened = tried["opened"]
        if "raised" in tried:
            raise CheckFailure(
                check,
                f"saving step 0 again with {opened} raised {tried['raised']}",
                "call manager.save(step, args=...) without force=True and return its bool: Orbax declines a step "
                "that exists with False",
            )
        with values.located(f"saving step 0 again with {opened}"):
            if tried["returned"] is not False:
                raise CheckFailure(
                    check,
                    f"save_to_manager returned {tried['returned']}, expected False",
                    "return the bool manager.save returns: False when Orbax declines the step",
                )
            if not same_files(tried["after"], tried["before"]):
                raise CheckFailure(
                    check,
                    "the manager's directory changed",
                    "let manager.save decide: it declines a step that exists and writes nothing",
                )


# restore_latest -------------------------------------------------------------


def test_restore_latest_returns_the_target_itself_when_nothing_was_saved(student, target, workdir):
    manager = a_manager(workdir / "empty", 2)
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


@pytest.fixture(scope="module")
def run(reference, trained, trained_more):
    """A manager's directory where the reference saved steps 3 and 6, as files (given to the restore_latest checks)."""
    return transformed(reference, "save_to_manager", "a run", run_saved_by)((trained, trained_more))


@correctness
def test_restore_latest_restores_the_newest_step_exactly(student, reference, run, target):
    check = "restore_latest restores the newest step (6 of 3 and 6) exactly"
    result = structure.transformed_once(student.restore_latest, "from a run", restored_from_run)(run, target)
    expected = transformed(reference, "restore_latest", "from a run", restored_from_run)(run, target)
    assert_same_state(result, expected, check=check)


@decided_by_values
def test_restore_latest_gives_the_targets_structure(student, run, target):
    result = structure.transformed_once(student.restore_latest, "from a run", restored_from_run)(run, target)
    assert_has_structure_of(
        result,
        target,
        name="restored",
        check="restore_latest returns a state of the target's class, apply_fn, tx, structure, shapes and dtypes",
    )


@decided_by_values
def test_restore_latest_follows_the_targets_dtypes(student, run, trained_more, target):
    """A bfloat16 target gives bfloat16 params holding the newest step's values: the target's structure is
    what restore_latest restores into, whatever target it is given (decided from the restored state recorded as
    data, its dtypes beside it)."""
    got = structure.transformed_once(
        student.restore_latest, "into bfloat16 from a run", lambda restore: into_bfloat16(restore, "run")
    )(run, target)
    assert_follows_the_targets_dtypes(
        got,
        target,
        trained_more,
        check="restore_latest into a bfloat16 target gives bfloat16 params holding the newest step's values",
    )


def restored_after_step_0(restore_latest):
    """``restore_latest`` with a manager (it keeps 2) whose only checkpoint is ``saved`` at step 0."""

    def restored(saved, target):
        with files.new_directory() as directory:
            manager = a_manager(directory / "run", 2)
            try:
                save_into(manager, saved)
                return restore_latest(manager, target)
            finally:
                manager.close()

    return restored


@decided_by_values
def test_restore_latest_restores_a_step_0_checkpoint(student, model, tx, target):
    """Step 0 is a step: a run whose only checkpoint is step 0 (a fresh state) restores it, not the target. Judged
    from the restored state (recorded as values)."""
    saved = fresh_state(model, tx, seed=TRAINED_SEED)
    result = structure.transformed_once(student.restore_latest, "after step 0", restored_after_step_0)(saved, target)
    check = "restore_latest restores a checkpoint saved at step 0"
    try:
        states.assert_fields_close(result, target, ("params",), rtol=0, atol=0, check=check)
        returned_the_target = True
    except CheckFailure:
        returned_the_target = False
    if returned_the_target:
        raise CheckFailure(
            check,
            "restore_latest returned the target itself although step 0 was saved (the target's params, not the "
            "saved ones)",
            "latest_step() is 0 here, and 0 is falsy: compare latest_step() with None, not its truth value",
        )
    assert_has_structure_of(result, target, name="restored", check=check)
    assert_same_state(result, saved, check=check)


def restored_after_a_restart(restore_latest):
    """A run given as files, where a first manager (it keeps 3) saves ``state`` and closes: ``restore_latest`` with a
    new manager on the same folder."""

    def restored(run, state, target):
        with files.new_directory() as directory:
            folder = files.materialise(run, directory / "run")
            manager = a_manager(folder, 3)
            try:
                save_into(manager, state)
            finally:
                manager.close()
            reopened = a_manager(folder, 3)
            try:
                return restore_latest(reopened, target)
            finally:
                reopened.close()

    return restored


@decided_by_values
def test_restore_latest_works_from_a_new_manager_on_the_same_directory(student, run, trained, target):
    """Resume after a restart: a first manager saves and closes, a new one opens the directory. Judged from the
    restored state (recorded as values)."""
    saved = trained.replace(step=8)
    restore = structure.transformed_once(student.restore_latest, "after a restart", restored_after_a_restart)
    result = restore(run, saved, target)
    check = "restore_latest from a new manager on the same directory restores its newest step (8)"
    assert_has_structure_of(result, target, name="restored", check=check)
    assert_same_state(result, saved, check=check)
