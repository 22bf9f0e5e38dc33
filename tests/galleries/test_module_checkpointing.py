"""The checkpointing checks judge right: checkpoints that are incomplete on return, in another format, restored
without a target, written beside the path, or saved at the wrong step fail with a message naming what was
detected; correct code written differently (explicit waits, the legacy flax.training.checkpoints, ...) passes."""

import pytest
from support import assert_accepted, assert_rejected, grade, with_function

MODULE = "checkpointing"
IMPORTS = "import os\nimport pickle\nimport jax.numpy as jnp\n"

CORRECT = [
    (
        "save_checkpoint",
        "explicit-wait-and-close",
        """
        def save_checkpoint(path, state):
            checkpointer = ocp.StandardCheckpointer()
            checkpointer.save(path, state)
            checkpointer.wait_until_finished()
            checkpointer.close()
    """,
    ),
    (
        "save_checkpoint",
        "checkpointer-with-standard-save-args",
        """
        def save_checkpoint(path, state):
            with ocp.Checkpointer(ocp.StandardCheckpointHandler()) as checkpointer:
                checkpointer.save(path, args=ocp.args.StandardSave(state))
    """,
    ),
    (
        "save_checkpoint",
        "synchronous-pytree-checkpointer",
        """
        def save_checkpoint(path, state):
            ocp.PyTreeCheckpointer().save(path, state)  # synchronous: complete when save returns
    """,
    ),
    (
        "restore_checkpoint",
        "tree-util-shape-dtype-structs",
        """
        def restore_checkpoint(path, target):
            abstract = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct, target)
            checkpointer = ocp.StandardCheckpointer()
            restored = checkpointer.restore(path, abstract)
            checkpointer.close()
            return restored
    """,
    ),
    (
        "make_manager",
        "keyword-arguments",
        """
        def make_manager(directory, max_to_keep):
            return ocp.CheckpointManager(
                directory=directory, options=ocp.CheckpointManagerOptions(create=True, max_to_keep=max_to_keep)
            )
    """,
    ),
    (
        "save_to_manager",
        "step-read-with-jax-device-get",
        """
        def save_to_manager(manager, state):
            step = int(jax.device_get(state.step))
            result = manager.save(step, args=ocp.args.StandardSave(state))
            manager.wait_until_finished()
            return bool(result)
    """,
    ),
    (
        "save_to_manager",
        "declines-an-existing-step-itself",
        """
        def save_to_manager(manager, state):
            step = int(state.step)
            if step in manager.all_steps():
                return False
            saved = manager.save(step, args=ocp.args.StandardSave(state))
            manager.wait_until_finished()
            return saved
    """,
    ),
    (
        "save_checkpoint",
        "explicit-return-none",
        """
        def save_checkpoint(path, state):
            with ocp.StandardCheckpointer() as checkpointer:
                checkpointer.save(path, state)
            return None
    """,
    ),
    (
        "make_manager",
        "options-built-first-keyword-max-to-keep",
        """
        def make_manager(directory, max_to_keep):
            options = ocp.CheckpointManagerOptions(max_to_keep=int(max_to_keep), create=True)
            return ocp.CheckpointManager(os.fspath(directory), options=options)
    """,
    ),
    (
        "restore_latest",
        "max-of-all-steps",
        """
        def restore_latest(manager, target):
            steps = list(manager.all_steps())
            if len(steps) == 0:
                return target
            abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, target)
            return manager.restore(max(steps), args=ocp.args.StandardRestore(abstract))
    """,
    ),
    (
        "restore_latest",
        "standard-restore-of-the-concrete-target",
        """
        def restore_latest(manager, target):
            step = manager.latest_step()
            if step is None:
                return target
            return manager.restore(step, args=ocp.args.StandardRestore(target))  # Orbax reads its shapes and dtypes
    """,
    ),
    (
        "restore_latest",
        "delegates-to-restore-with-abstract-pytree",
        """
        def restore_latest(manager, target):
            if manager.latest_step() is None:
                return target
            abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, target)
            return manager.restore(manager.latest_step(), args=ocp.args.StandardRestore(abstract))
    """,
    ),
]


@pytest.mark.parametrize("function, replacement", [(f, src) for f, _, src in CORRECT], ids=[i for _, i, _ in CORRECT])
def test_correct_variant_written_differently_passes(pytester, function, replacement):
    source = IMPORTS + with_function(MODULE, replacement)
    assert_accepted(grade(pytester, MODULE, source, only=function)[function])


WRONG = [
    (
        "save_checkpoint",
        "no-wait-until-finished",
        """
        _checkpointer = ocp.StandardCheckpointer()

        def save_checkpoint(path, state):
            _checkpointer.save(path, state)
    """,
        r"save_checkpoint returned while .*\.orbax-checkpoint-tmp was still being written",
    ),
    (
        "save_checkpoint",
        "no-wait-and-the-next-save-fails",
        """
        _checkpointer = ocp.StandardCheckpointer()

        def save_checkpoint(path, state):
            # What Orbax raises from the next save when an earlier save, never waited for, lost its folder
            # under the background writer (the race a loaded machine can end this way).
            import tempfile

            leftover = os.path.join(tempfile.gettempdir(), "check-" + os.urandom(4).hex(), "ckpt.orbax-checkpoint-tmp")
            raise FileNotFoundError(2, "No such file or directory", os.path.join(leftover, "ocdbt.process_0", "d"))
    """,
        r"save_checkpoint returned while ckpt\.orbax-checkpoint-tmp was still being written \(its next save",
    ),
    (
        "save_checkpoint",
        "pickle",
        """
        def save_checkpoint(path, state):
            os.makedirs(path)
            with open(os.path.join(path, "state.pkl"), "wb") as f:
                pickle.dump(jax.device_get((state.step, state.params, state.opt_state)), f)
    """,
        r"Orbax could not read the checkpoint it wrote(.*\n)*.*not pickle, msgpack",
    ),
    (
        "save_checkpoint",
        "flax-msgpack-bytes",
        """
        from flax import serialization

        def save_checkpoint(path, state):
            os.makedirs(path)
            with open(os.path.join(path, "state.msgpack"), "wb") as f:
                f.write(serialization.to_bytes(state))
    """,
        r"Orbax could not read the checkpoint it wrote: [^\n]* at <the check's folder>/ckpt\.",
    ),  # the same words every run
    (
        "save_checkpoint",
        "sidecar-file-beside-path",
        """
        def save_checkpoint(path, state):
            with ocp.StandardCheckpointer() as checkpointer:
                checkpointer.save(path, state)
            with open(str(path) + ".step", "w") as f:
                f.write(str(int(state.step)))
    """,
        r"save_checkpoint wrote outside 'ckpt': ckpt\.step",
    ),
    (
        "save_checkpoint",
        "relative-path-in-working-directory",
        """
        def save_checkpoint(path, state):
            with ocp.StandardCheckpointer() as checkpointer:
                checkpointer.save(os.path.abspath(os.path.basename(path)), state)
    """,
        r"is not a directory|could not read|wrote outside",
    ),
    # what was written is judged by what the reference reads from it, not by its bytes
    (
        "save_checkpoint",
        "params-only",
        """
        def save_checkpoint(path, state):
            with ocp.StandardCheckpointer() as checkpointer:
                checkpointer.save(path, {"params": state.params})
    """,
        r"saving a trained state \(step 4\): the checkpoint does not have the structure of the reference's",
    ),
    (
        "save_checkpoint",
        "step-reset-to-zero",
        """
        def save_checkpoint(path, state):
            with ocp.StandardCheckpointer() as checkpointer:
                checkpointer.save(path, state.replace(step=jnp.zeros((), jnp.int32)))
    """,
        r"saving a trained state \(step 4\): the checkpoint\['step'\] differs from the reference",
    ),
    (
        "restore_checkpoint",
        "restore-without-target",
        """
        def restore_checkpoint(path, target):
            with ocp.StandardCheckpointer() as checkpointer:
                return checkpointer.restore(path)
    """,
        r"restored is a builtins.dict, not a TrainState(.*\n)*.*without a target Orbax returns plain dicts",
    ),
    (
        "restore_checkpoint",
        "params-only-into-target",
        """
        def restore_checkpoint(path, target):
            with ocp.StandardCheckpointer() as checkpointer:
                restored = checkpointer.restore(path)
            return target.replace(params=restored["params"])
    """,
        r"restored.step differs from the reference: expected 3, got 0",
    ),
    (
        "restore_checkpoint",
        "numpy-leaves",
        """
        def restore_checkpoint(path, target):
            abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, target)
            with ocp.StandardCheckpointer() as checkpointer:
                restored = checkpointer.restore(path, abstract)
            return jax.device_get(restored)
    """,
        r"is a ndarray, expected a jax.Array like the target's",
    ),
    (
        "make_manager",
        "a-class-of-its-own",
        """
        class Keeper:
            def __init__(self, directory, max_to_keep):
                options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True)
                self.inner = ocp.CheckpointManager(directory, options=options)

            def close(self):
                self.inner.close()

        def make_manager(directory, max_to_keep):
            return Keeper(directory, max_to_keep)
    """,
        r"make_manager returned a \S*Keeper(.*\n)*.*checked: make_manager returns an ocp.CheckpointManager",
    ),
    (
        "make_manager",
        "without-max-to-keep",
        """
        def make_manager(directory, max_to_keep):
            return ocp.CheckpointManager(directory, options=ocp.CheckpointManagerOptions(create=True))
    """,
        r"manager.all_steps\(\) is \[1, 2, 3, 4\], expected \[4\]",
    ),
    (
        "make_manager",
        "create-false",
        """
        def make_manager(directory, max_to_keep):
            return ocp.CheckpointManager(directory, options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep,
                                                                                         create=False))
    """,
        r"does not exist yet(.*\n)*.*create=True",
    ),
    (
        "make_manager",
        "hard-coded-max-to-keep",
        """
        def make_manager(directory, max_to_keep):
            return ocp.CheckpointManager(directory, options=ocp.CheckpointManagerOptions(create=True, max_to_keep=2))
    """,
        r"manager.all_steps\(\) is \[3, 4\], expected \[4\](.*\n)*.*make_manager\(directory, 1\)(.*\n)*.*max_to_keep you are given",
    ),
    (
        "save_checkpoint",
        "returns-the-path-like-flax",
        """
        def save_checkpoint(path, state):
            with ocp.StandardCheckpointer() as checkpointer:
                checkpointer.save(path, state)
            return path
    """,
        r"save_checkpoint returned .*, expected None(.*\n)*.*flax.training.checkpoints",
    ),
    (
        "save_to_manager",
        "saves-only-the-params",
        """
        def save_to_manager(manager, state):
            saved = manager.save(int(state.step), args=ocp.args.StandardSave(state.params))
            manager.wait_until_finished()
            return saved
    """,
        r"step 7 cannot be read back as a TrainState(.*\n)*.*save the whole state",
    ),
    (
        "save_to_manager",
        "saves-the-fresh-step-count",
        """
        def save_to_manager(manager, state):
            saved = manager.save(int(state.step), args=ocp.args.StandardSave(state.replace(step=0)))
            manager.wait_until_finished()
            return saved
    """,
        r"reading back step 7: the saved state's leaves\[0\] differs",
    ),
    (
        "save_to_manager",
        "step-0-declined",
        """
        def save_to_manager(manager, state):
            step = int(state.step)
            if not step:
                return False  # "nothing trained yet"
            saved = manager.save(step, args=ocp.args.StandardSave(state))
            manager.wait_until_finished()
            return saved
    """,
        r"step 0(.*\n)*.*returned False, expected True|returned False, expected True(.*\n)*.*step 0",
    ),
    (
        "save_to_manager",
        "force-true",
        """
        def save_to_manager(manager, state):
            saved = manager.save(int(state.step), args=ocp.args.StandardSave(state), force=True)
            manager.wait_until_finished()
            return saved
    """,
        r"saving step 0 again with the same manager raised StepAlreadyExistsError",
    ),
    (
        "save_to_manager",
        "true-when-the-step-exists",
        """
        def save_to_manager(manager, state):
            step = int(state.step)
            if step in manager.all_steps():
                return True
            saved = manager.save(step, args=ocp.args.StandardSave(state))
            manager.wait_until_finished()
            return saved
    """,
        r"saving step 0 again with the same manager: save_to_manager returned True, expected False",
    ),
    (
        "restore_latest",
        "step-0-as-nothing-saved",
        """
        def restore_latest(manager, target):
            step = manager.latest_step()
            if not step:
                return target
            abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, target)
            return manager.restore(step, args=ocp.args.StandardRestore(abstract))
    """,
        r"returned the target itself although step 0 was saved(.*\n)*.*compare latest_step\(\) with None",
    ),
    (
        "save_to_manager",
        "counter-instead-of-state-step",
        """
        def save_to_manager(manager, state):
            step = len(manager.all_steps())
            saved = manager.save(step, args=ocp.args.StandardSave(state))
            manager.wait_until_finished()
            return saved
    """,
        r"there is no step directory 3(.*\n)*.*save at int\(state.step\)",
    ),
    (
        "save_to_manager",
        "no-wait",
        """
        def save_to_manager(manager, state):
            return manager.save(int(state.step), args=ocp.args.StandardSave(state))
    """,
        r"save_to_manager returned while \d+\.orbax-checkpoint-tmp was still being written",
    ),
    (
        "save_to_manager",
        "returns-nothing",
        """
        def save_to_manager(manager, state):
            manager.save(int(state.step), args=ocp.args.StandardSave(state))
            manager.wait_until_finished()
    """,
        r"save_to_manager returned None, expected True",
    ),
    (
        "restore_latest",
        "new-object-when-empty",
        """
        def restore_latest(manager, target):
            step = manager.latest_step()
            if step is None:
                return target.replace()
            abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, target)
            return manager.restore(step, args=ocp.args.StandardRestore(abstract))
    """,
        r"not the very target it was given",
    ),
    # the newest step's values poured into the target with jnp.asarray(..., jnp.float32): right for a float32
    # target only (the structure, the values and the apply_fn are the target's; a bfloat16 target comes back float32)
    (
        "restore_latest",
        "float32-whatever-the-target",
        """
        def restore_latest(manager, target):
            step = manager.latest_step()
            if step is None:
                return target
            abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, target)
            restored = manager.restore(step, args=ocp.args.StandardRestore(abstract))
            as_float32 = lambda p: jnp.asarray(p, jnp.float32)
            return restored.replace(params=jax.tree.map(as_float32, restored.params))
    """,
        r"is float32\[5\], but the target has bfloat16\[5\]\n.*checked: restore_latest into a bfloat16 target",
    ),
    (
        "restore_latest",
        "oldest-step",
        """
        def restore_latest(manager, target):
            steps = manager.all_steps()
            if not steps:
                return target
            abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, target)
            return manager.restore(min(steps), args=ocp.args.StandardRestore(abstract))
    """,
        r"restored.step differs from the reference: expected 6, got 3",
    ),
]


@pytest.mark.parametrize(
    "function, replacement, pattern", [(w[0], w[2], w[3]) for w in WRONG], ids=[f"{w[0]}-{w[1]}" for w in WRONG]
)
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern):
    results = grade(pytester, MODULE, IMPORTS + with_function(MODULE, replacement), only=function)
    assert_rejected(results[function], pattern)


def test_a_save_still_being_written_on_return_fails_only_as_incomplete(pytester):
    """Orbax's own temporary folder of the path, there when the save returns, is the save of ``ckpt`` still being
    written: it fails the completeness check, never "wrote outside 'ckpt'" (whether a save left running had already
    renamed it is a race, and the check beside it must not depend on it)."""
    replacement = """
        def save_checkpoint(path, state):
            # the whole checkpoint, left in Orbax's temporary folder: a save still being written when it returns
            with ocp.StandardCheckpointer() as checkpointer:
                checkpointer.save(str(path) + ".orbax-checkpoint-tmp", state)
    """
    only = "test_save_checkpoint_writes_only_under_path or test_save_checkpoint_is_complete_on_return"
    result = grade(pytester, MODULE, IMPORTS + with_function(MODULE, replacement), only=only)["save_checkpoint"]
    assert (result.passed, result.total) == (1, 2), result.messages
    assert_rejected(result, r"save_checkpoint returned while ckpt\.orbax-checkpoint-tmp was still being written")
    assert "wrote outside" not in result.message, result.message
