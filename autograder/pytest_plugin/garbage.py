"""Python's garbage collector during a student's run: the heap JAX, Flax and torch bring is walked rarely.

A run of one module imports millions of long-lived objects (JAX, Flax, torch, hypothesis) and then
allocates enough that Python walks the *whole* heap several times (6 full collections in
``test_training.py``, 8 in ``test_dropout_rngs.py``: 0.4-0.6 s of a 3-4 s run), each time to find
that nothing imported is garbage. So, in a student's own run:

- once the checks are collected (their imports done), everything alive is set aside
  (``gc.freeze()``): later full collections walk only what the checks create; it is given back
  (``gc.unfreeze()``) when the run ends, so a process that runs pytest again (a notebook's check
  cells) keeps nothing for good;
- pytest's ``unraisableexception`` plugin does not walk the heap once more at exit only to look for
  exceptions raised in finalizers (those raised while the checks run are still reported). Its
  ``gc_collect_iterations_key`` stash item is that plugin's own switch.

Not in grading processes: what they hold is examined through ``gc`` by the kit's attack tests, and
frozen objects are invisible to ``gc.get_objects()``.
"""

from __future__ import annotations

import gc

import pytest

FROZEN = pytest.StashKey[bool]()


def skip_final_collection(config: pytest.Config) -> None:
    """No heap walk by pytest's ``unraisableexception`` plugin when the run ends (any run of the course)."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:  # another pytest: keep its behaviour
        return
    config.stash[gc_collect_iterations_key] = 0


def set_aside_what_is_alive(config: pytest.Config) -> None:
    """``gc.freeze()``: everything alive now (undone by :func:`give_back`)."""
    gc.freeze()
    config.stash[FROZEN] = True


def give_back(config: pytest.Config) -> None:
    """``gc.unfreeze()`` if this run froze anything."""
    if config.stash.get(FROZEN, False):
        gc.unfreeze()
        config.stash[FROZEN] = False
