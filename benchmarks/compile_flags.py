"""What XLA's flags cost in compiling the course's kind of programs: XLA's defaults, the kit's earlier quick flags and
the kit's quick flags now (:data:`autograder.runtime.devices.QUICK_COMPILE_FLAGS`), side by side in one run.

    python benchmarks/compile_flags.py [--rounds N]

Each round compiles the same programs (a Flax MLP's train step with Optax's Adam, a BatchNorm model's step, per-example
gradients under vmap, PRNG draws, ``.at[]`` updates; several shapes each, as hypothesis draws them) once per flag set,
each in a fresh interpreter (XLA reads its flags when its backend starts), the flag sets alternated within a round.
Printed: the median CPU seconds of compiling them (``Lowered.compile``, the persistent cache off) per flag set and as
a ratio to the kit's flags, and whether each flag set's results agree with the kit's bit for bit. Not a test: the
figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.runtime.devices import QUICK_COMPILE_FLAGS  # noqa: E402

SPLIT_COUNT = "--xla_cpu_parallel_codegen_split_count"
FLAG_SETS = {
    "XLA's defaults": (),
    "quick flags before (no split count)": tuple(f for f in QUICK_COMPILE_FLAGS if f.split("=")[0] != SPLIT_COUNT),
    "the kit's quick flags": QUICK_COMPILE_FLAGS,
}

PROGRAMS = r"""
import json, sys, time
import numpy as np, jax, jax.numpy as jnp, optax, flax.linen as nn
jax.config.update("jax_enable_compilation_cache", False)

class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.relu(nn.Dense(32)(nn.relu(nn.Dense(32)(x)))))

class BN(nn.Module):
    @nn.compact
    def __call__(self, x, train):
        return nn.Dense(3)(nn.BatchNorm(use_running_average=not train)(nn.gelu(nn.Dense(16)(x))))

def train_step(i):
    m, tx = MLP(), optax.adam(1e-3)
    x, y = jnp.linspace(-1, 1, (8 + i) * 4).reshape(8 + i, 4), jnp.ones((8 + i, 1))
    p = m.init(jax.random.key(0), x)
    def step(p, s, x, y):
        loss, g = jax.value_and_grad(lambda p: ((m.apply(p, x) - y) ** 2).mean())(p)
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s, loss
    return jax.jit(step), (p, tx.init(p), x, y)

def batchnorm_step(i):
    m, tx = BN(), optax.sgd(0.1)
    x = jnp.linspace(-2, 2, (6 + i) * 5).reshape(6 + i, 5)
    v = m.init(jax.random.key(1), x, False)
    def step(v, s, x):
        def loss(p):
            out, upd = m.apply({**v, "params": p}, x, True, mutable=["batch_stats"])
            return jax.nn.logsumexp(out, axis=1).mean(), upd
        (l, upd), g = jax.value_and_grad(loss, has_aux=True)(v["params"])
        u, s = tx.update(g, s, v["params"])
        return {"params": optax.apply_updates(v["params"], u), **upd}, s, l
    return jax.jit(step), (v, tx.init(v["params"]), x)

def per_example_grads(i):
    loss = lambda w, xi: jnp.tanh(xi @ w).sum()
    f = jax.jit(jax.vmap(jax.grad(loss), (None, 0)))
    return f, (jnp.linspace(0, 1, 32).reshape(8, 4), jnp.linspace(-1, 1, (16 + i) * 8).reshape(16 + i, 8))

def draws(i):
    f = jax.jit(lambda k: jax.random.normal(jax.random.fold_in(k, 3), (10 + i, 3)) + jax.random.uniform(k, (10 + i, 3)))
    return f, (jax.random.key(i),)

def at_updates(i):
    f = jax.jit(lambda a, idx: a.at[idx].add(1.0).at[jnp.diag_indices(a.shape[0])].set(0.0).at[0].min(0.5))
    return f, (jnp.linspace(0, 1, (5 + i) ** 2).reshape(5 + i, 5 + i), jnp.arange(3) % (5 + i))

made = [make(i) for i in range(4) for make in (train_step, batchnorm_step, per_example_grads, draws, at_updates)]
lowered = [f.lower(*args) for f, args in made]
start = time.process_time()
compiled = [low.compile() for low in lowered]
seconds = time.process_time() - start
out = [c(*args) for c, (_, args) in zip(compiled, made)]
leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(out) if not jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)]
bits = np.concatenate([leaf.astype(np.float32).ravel() for leaf in leaves]).view(np.uint32)
print(json.dumps({"seconds": seconds, "programs": len(lowered), "bits": bits.tolist()}))
"""


def run(flags: tuple[str, ...]) -> dict:
    env = dict(os.environ, XLA_FLAGS=" ".join(flags), JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", PROGRAMS], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    seconds: dict[str, list[float]] = {name: [] for name in FLAG_SETS}
    bits: dict[str, list[int]] = {}
    programs = 0
    for round_ in range(args.rounds):
        names = list(FLAG_SETS) if round_ % 2 == 0 else list(reversed(FLAG_SETS))
        for name in names:
            found = run(FLAG_SETS[name])
            seconds[name].append(found["seconds"])
            bits.setdefault(name, found["bits"])
            programs = found["programs"]
        print(f"round {round_ + 1}/{args.rounds}: " + ", ".join(f"{n} {seconds[n][-1]:.2f} s" for n in names))
    kit = statistics.median(seconds["the kit's quick flags"])
    print(f"\ncompiling {programs} programs (CPU seconds, median of {args.rounds}; ratio to the kit's flags):")
    for name, flags in FLAG_SETS.items():
        median = statistics.median(seconds[name])
        same = bits[name] == bits["the kit's quick flags"]
        print(f"  {name:38s} {median:6.2f} s  {median / kit:5.2f}x  results bit for bit the kit's: {same}")
        print(f"    XLA_FLAGS={' '.join(flags) or '(none)'}")


if __name__ == "__main__":
    main()
