"""Module 12 — saving and restoring a ``TrainState`` with Orbax.

A long training run must survive a restart: every so often it writes its
state to disk, and a new process reads it back and carries on. A
``TrainState`` is a pytree, so saving it means saving its array leaves:
``step``, ``params`` and ``opt_state``. Its ``apply_fn`` and ``tx`` are code,
not data; they are not saved, and on restore they come from a *target*, a
state of the same model and optimizer (e.g. a freshly created one), which
also gives the restored leaves their structure, shapes and dtypes.

The tutorial uses ``flax.training.checkpoints``, the legacy API; it now
delegates to **Orbax**, the checkpointing library of JAX
(``import orbax.checkpoint as ocp``):

* ``ocp.StandardCheckpointer()`` saves one pytree as a checkpoint
  *directory*. Saving is asynchronous: ``save`` returns while the files are
  still being written into ``<path>.orbax-checkpoint-tmp``, and the
  directory gets its final name only when the write is complete. Wait with
  ``wait_until_finished()``, or use the checkpointer as a context manager
  (``with ocp.StandardCheckpointer() as c:``), which waits when it closes.
* ``restore(path, abstract_target)`` reads it back into the structure of
  ``abstract_target``: the target with every array replaced by its shape
  and dtype, ``jax.tree.map(ocp.utils.to_shape_dtype_struct, target)``.
  Without a target you get plain dicts, not a ``TrainState``.
* ``ocp.CheckpointManager(directory, options=...)`` keeps a series of
  checkpoints, one sub-directory per step, and deletes the oldest beyond
  ``max_to_keep``.

Orbax wants **absolute** paths (a relative one fails with ``ValueError:
Checkpoint path should be absolute``). Your functions write only at the path
or into the directory they are given, and they return only once the
checkpoint is complete on disk.

Run the checks with

    pytest exercises/test_checkpointing.py
"""

import jax  # noqa: F401  (for jax.tree.map)
import orbax.checkpoint as ocp  # noqa: F401


def save_checkpoint(path, state):
    """Save the ``TrainState`` ``state`` as a new Orbax checkpoint directory at ``path``; return ``None``.

    ``path`` is absolute and does not exist yet. Use
    ``ocp.StandardCheckpointer`` and wait until the save is finished before
    returning: when this function returns, ``path`` must exist under its
    final name with the whole checkpoint in it. Write nothing anywhere else.
    """
    # TODO: a StandardCheckpointer, save(path, state), and wait for it
    raise NotImplementedError


def restore_checkpoint(path, target):
    """Read the checkpoint at ``path`` into the structure of ``target``; return the restored state.

    ``target`` is a ``TrainState`` of the same model and optimizer (e.g. a
    fresh one). Restore against its abstract version
    (``jax.tree.map(ocp.utils.to_shape_dtype_struct, target)``), so that the
    result is a state of ``target``'s class, with ``target``'s ``apply_fn``,
    ``tx``, tree structure, shapes and dtypes, holding exactly the saved
    values. ``target`` itself stays as it was.
    """
    # TODO: StandardCheckpointer().restore(path, abstract target)
    raise NotImplementedError


def make_manager(directory, max_to_keep):
    """An ``ocp.CheckpointManager`` for ``directory`` that keeps the ``max_to_keep`` newest steps.

    Pass ``options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep,
    create=True)`` (``create``: make the directory if it is missing).
    """
    # TODO: ocp.CheckpointManager(directory, options=ocp.CheckpointManagerOptions(...))
    raise NotImplementedError


def save_to_manager(manager, state):
    """Save ``state`` in ``manager`` at the step ``int(state.step)``; return what ``manager.save`` returns.

    Use ``manager.save(step, args=ocp.args.StandardSave(state))`` and wait
    until it is written (``manager.wait_until_finished()``). ``save`` returns
    ``True`` when it wrote the checkpoint and ``False`` when it declined
    (the step is older than the newest saved one; then nothing is written).
    Saving a step that already exists raises Orbax's error: let it through.
    """
    # TODO: manager.save at the state's own step, wait, return the bool
    raise NotImplementedError


def restore_latest(manager, target):
    """Resume: the newest checkpoint of ``manager`` restored into ``target``'s structure.

    ``manager.latest_step()`` is ``None`` when nothing was saved yet: then
    return ``target`` itself (there is nothing to resume). Otherwise restore
    that step with ``ocp.args.StandardRestore(abstract_target)``, as
    ``restore_checkpoint`` does.
    """
    # TODO: latest_step(), then manager.restore(step, args=ocp.args.StandardRestore(...))
    raise NotImplementedError
