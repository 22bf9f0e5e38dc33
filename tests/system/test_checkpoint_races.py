"""Module 10's checks under the race a loaded machine plays: a save that returns before Orbax's background writer
has even started. Nothing is at the path when it returns, and its folder appears a moment later: the message says
the save returned while the checkpoint was still being written, not that nothing is a directory there, nor that the
step is wrong (the CI flake of ``save_checkpoint-no-wait-until-finished``).

The answers start a thread, to make the race certain: the screen flags that (not one of the course's libraries), so
they are kept here, not among the galleries' honest answers (``tests/galleries/test_module_checkpointing.py``)."""

import pytest
from support import assert_rejected, grade, with_function

MODULE = "checkpointing"
IMPORTS = "import os\nimport jax.numpy as jnp\n"

RACES = [
    (
        "save_checkpoint",
        "no-wait-and-the-save-starts-after-the-return",
        """
        import threading
        import time

        def save_checkpoint(path, state):
            # Orbax's background writer not even started when save_checkpoint returns (a loaded machine): nothing
            # at all is at the path then, and its temporary folder appears a moment later.
            def later():
                time.sleep(0.2)
                checkpointer = ocp.StandardCheckpointer()
                checkpointer.save(path, state)
                checkpointer.wait_until_finished()

            threading.Thread(target=later, daemon=True).start()
    """,
        r"save_checkpoint returned while ckpt\.orbax-checkpoint-tmp was still being written \(nothing was at 'ckpt'",
    ),
]


@pytest.mark.parametrize(
    "function, replacement, pattern", [(r[0], r[2], r[3]) for r in RACES], ids=[f"{r[0]}-{r[1]}" for r in RACES]
)
def test_a_save_that_returned_before_its_writer_started_is_told_it_did_not_wait(
    pytester, function, replacement, pattern
):
    results = grade(pytester, MODULE, IMPORTS + with_function(MODULE, replacement), only=function)
    assert_rejected(results[function], pattern)
