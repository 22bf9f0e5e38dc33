"""Lowering in reused MLIR contexts (:mod:`autograder.runtime.lowering`): shared within a thread, renewed after
a bound, never shared between threads (the same programs as in fresh contexts, and every course run lowering that
way, are proven in fresh interpreters: ``tests/system/test_lowering_processes.py``)."""

import threading

from autograder.runtime import lowering


def test_one_context_per_thread_renewed_after_the_bound():
    made = []

    def fresh():
        made.append(object())
        return made[-1]

    make = lowering._reusing(fresh)
    first = [make() for _ in range(lowering.LOWERINGS_PER_CONTEXT)]
    assert len(made) == 1 and all(context is made[0] for context in first)
    assert make() is made[1]  # renewed: what one context keeps for good is bounded

    other = []
    thread = threading.Thread(target=lambda: other.append(make()))
    thread.start()
    thread.join()
    assert other[0] is made[2]  # another thread never lowers in this thread's context
