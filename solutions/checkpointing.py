"""Reference solution: saving and restoring a TrainState with Orbax."""

import jax
import orbax.checkpoint as ocp


def save_checkpoint(path, state):
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(path, state)
        checkpointer.wait_until_finished()


def abstract_like(target):
    return jax.tree.map(ocp.utils.to_shape_dtype_struct, target)


def restore_checkpoint(path, target):
    with ocp.StandardCheckpointer() as checkpointer:
        return checkpointer.restore(path, abstract_like(target))


def make_manager(directory, max_to_keep):
    options = ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True)
    return ocp.CheckpointManager(directory, options=options)


def save_to_manager(manager, state):
    saved = manager.save(int(state.step), args=ocp.args.StandardSave(state))
    manager.wait_until_finished()
    return saved


def restore_latest(manager, target):
    step = manager.latest_step()
    if step is None:
        return target
    return manager.restore(step, args=ocp.args.StandardRestore(abstract_like(target)))
