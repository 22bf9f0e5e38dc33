"""Lowering in reused MLIR contexts (:mod:`autograder.runtime.lowering`), in fresh interpreters: the programs are
the same as in fresh contexts, and every course run lowers that way (the per-thread rule:
``tests/unit/runtime/test_lowering.py``)."""

import os
import subprocess
import sys

from support import ROOT

# Lowers and runs a few programs (eager ops, a jitted gradient, a scan) and prints each program's text
# digest and result; with REUSE set, in reused contexts.
PROGRAMS = """
import hashlib, os, sys
import jax, jax.numpy as jnp
if os.environ.get("REUSE"):
    from autograder.runtime.lowering import reuse_ir_contexts
    reuse_ir_contexts()

def loss(w, x):
    return jnp.mean(jnp.tanh(x @ w) ** 2)

def cumulative(x):
    return jax.lax.scan(lambda c, v: (c + v, c * v), 0.0, x)

cases = [(jnp.sin, (jnp.arange(3.0),)), (jax.grad(loss), (jnp.ones((4, 2)), jnp.ones((5, 4)))),
         (cumulative, (jnp.arange(6.0),))]
for n in range(1, 40):  # more lowerings than one context serves when the bound is small
    (jnp.ones((n,)) * 2.0).block_until_ready()
for fn, args in cases:
    text = jax.jit(fn).lower(*args).as_text()
    print(hashlib.sha256(text.encode()).hexdigest()[:16], jax.tree.map(lambda a: a.tolist(), jax.jit(fn)(*args)))
"""


def run_programs(reuse: bool) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_COMPILATION_CACHE_DIR": ""}
    env.pop("REUSE", None)
    if reuse:
        env["REUSE"] = "1"
    done = subprocess.run([sys.executable, "-c", PROGRAMS], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_reused_context_lowers_the_same_programs_as_fresh_ones():
    """The text XLA compiles (and the compilation cache hashes) and the results are the same."""
    fresh, reused = run_programs(False), run_programs(True)
    assert fresh.count("\n") == 3
    assert reused == fresh


PROBE = """
from jax._src.interpreters import mlir

seen = {"reuses": None, "contexts": []}

def pytest_runtest_setup(item):
    current = mlir.make_ir_context
    if seen["reuses"] is None:
        seen["reuses"] = getattr(current, "reuses_contexts", False)

        def probing():
            context = current()
            seen["contexts"].append(context)
            return context

        mlir.make_ir_context = probing

def pytest_unconfigure(config):
    contexts = seen["contexts"]
    distinct = len({id(context) for context in contexts})  # every context is kept alive in the list
    print("PROBE", seen["reuses"], len(contexts), distinct)
"""


def test_a_course_run_lowers_in_reused_contexts(tmp_path):
    """A course run (the same hook serves students, grading processes, the verifier and notebooks) makes one
    context for its lowerings, not one each."""
    (tmp_path / "lowering_probe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}", "JAX_COURSE_CACHE_DIR": ""}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "exercises/test_at_updates.py",
            "--solutions",
            "-q",
            "-p",
            "lowering_probe",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-k",
            "set_diagonal",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    line = next((line for line in done.stdout.splitlines() if line.startswith("PROBE")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    _, reuses, lowerings, contexts = line.split()
    assert reuses == "True"
    assert int(lowerings) >= 10 and int(contexts) == 1, line
