"""The one ``jax.monitoring`` listener (:mod:`autograder.runtime.monitoring`), in a fresh interpreter: nothing is
registered at import, one listener serves both consumers (retrace counting, compile time), and both hear the same
events (where it is registered: ``tests/unit/checks/test_one_rule_of_checks.py``)."""

import subprocess
import sys

from support import ROOT


def test_one_monitoring_listener_registered_on_first_use():
    code = (
        "import jax, jax.numpy as jnp\n"
        "from jax._src import monitoring as m\n"
        "before = len(m._event_duration_secs_listeners)\n"
        "from autograder.checks.tracing import TraceCounter\n"
        "from autograder.pytest_plugin.compile_time import CompileClock\n"
        "at_import = len(m._event_duration_secs_listeners) - before\n"
        "with CompileClock() as clock, TraceCounter() as counter:\n"
        "    jax.jit(lambda x: x * 3 + 1)(jnp.ones(2)).block_until_ready()\n"
        "with TraceCounter() as other:\n"
        "    jax.jit(lambda x: x - 1)(jnp.ones(2)).block_until_ready()\n"
        "print(at_import, len(m._event_duration_secs_listeners) - before, counter.traces >= 1, counter.compiles >= 1,\n"
        "      clock.seconds > 0, other.traces >= 1)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    # nothing at import, one listener for both consumers, and both hear the same events
    assert out.stdout.split() == ["0", "1", "True", "True", "True", "True"]
