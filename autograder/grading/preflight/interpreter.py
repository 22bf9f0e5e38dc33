"""The first proof of a grading environment: this interpreter, started as a grading process starts, imports the
course's libraries and starts JAX's backend (:func:`check_interpreter`), before any submission is graded.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.grading.preflight.failures import PreflightFailed, last_lines

# What every grading process starts with (autograder.grading.isolation.zygote), then JAX's backend, in the grading
# processes' environment: an interpreter that cannot do this cannot grade anyone.
_INTERPRETER_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
from autograder.runtime import preload
from autograder.runtime.devices import use_course_backend
use_course_backend()
preload.import_all(preload.GRADING)
import jax, flax, optax, pytest, hypothesis
for device in jax.devices():  # the course's devices compute, each of them
    assert int(jax.device_put(jax.numpy.arange(3), device).sum()) == 3
"""
INTERPRETER_TIMEOUT = 300.0


def check_interpreter(env: dict[str, str], kit: Path | None = None) -> None:
    """Start this interpreter as a grading process starts (isolated mode, the grading processes' ``env``):
    import the libraries and start JAX's backend. Raises :class:`PreflightFailed` with its own last lines when
    it cannot (a JAX that cannot be imported, a backend that does not start)."""
    kit = kit or Path(__file__).resolve().parents[3]
    try:
        proc = run_isolated(_INTERPRETER_PROBE, str(kit), env=env, timeout=INTERPRETER_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise PreflightFailed(
            f"this Python ({sys.executable}) did not import the course's libraries within {INTERPRETER_TIMEOUT:g} s; "
            "nothing was graded"
        ) from None
    if proc.returncode != 0:
        raise PreflightFailed(
            f"this Python ({sys.executable}) cannot run a grading process: importing the course's libraries and "
            f"starting JAX's CPU backend failed (exit status {proc.returncode}), so nothing was graded"
            + last_lines(proc.stderr)
        )


def run_isolated(code: str, *args: str, env: dict[str, str] | None, timeout: float) -> subprocess.CompletedProcess:
    """This interpreter in isolated mode (``-I``) running ``code`` with ``args``, in ``env``, its output captured,
    no input, in the machine's temporary folder; raises ``subprocess.TimeoutExpired`` after ``timeout`` seconds."""
    return subprocess.run(
        [sys.executable, "-I", "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        cwd=tempfile.gettempdir(),
    )
