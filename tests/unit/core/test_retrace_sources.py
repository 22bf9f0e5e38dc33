"""The retrace causes read from a module's source (``core.retrace_sources``): every Python-side way of missing JAX's
caches that a student controls is found, in the function or in what it calls; honest forms (jit at module level, a
decorator, ``jax.jit(module_level_fn)`` inside a body, ``partial(jax.jit, static_argnames=...)``, a state's own
``apply_fn``/``tx``) are not. The course's references and stubs have none."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from autograder.core.retrace_sources import analyse

ROOT = Path(__file__).resolve().parents[3]
PRELUDE = """
import functools
from functools import partial
import operator
import jax
import jax.numpy as jnp
import optax
from flax import struct
from flax.training import train_state

def _loss(params, x, y):
    return jnp.sum((x @ params["W"] + params["b"] - y) ** 2)

def _linear(x, W, b):
    return x @ W + b
"""


def causes(body: str, function: str = "f", chained: bool = False) -> list[str]:
    found = analyse(PRELUDE + textwrap.dedent(body), function, chained=chained)
    assert found.found, f"{function} not found"
    return [c.what for c in found.causes]


RETRACING = {
    "jit-of-a-lambda": "def f(x, W, b):\n    return jax.jit(lambda x, W, b: x @ W + b)(x, W, b)",
    "jit-of-a-vmap": "def f(xs, W, b):\n    return jax.jit(jax.vmap(_linear, in_axes=(0, None, None)))(xs, W, b)",
    "jit-of-a-partial": "def f(x, W, b):\n    return jax.jit(functools.partial(_linear, W=W))(x, b=b)",
    "partial-jit-of-a-lambda": "def f(x):\n    return partial(jax.jit, static_argnums=())(lambda x: x + 1)(x)",
    "nested-def-decorated": "def f(x):\n    @jax.jit\n    def g(x):\n        return x + 1\n    return g(x)",
    "nested-def-decorated-with-partial": (
        "def f(x, n):\n    @partial(jax.jit, static_argnums=1)\n    def g(x, n):\n        return x + n\n    return g(x, n)"
    ),
    "jit-of-a-nested-def": "def f(x):\n    def g(x):\n        return x * 2\n    return jax.jit(g)(x)",
    "jit-of-a-parameter": "def f(x, fn=_linear):\n    return jax.jit(fn)(x, x, x)",
    "jit-of-a-bound-method": "def f(state, x):\n    return jax.jit(state.apply_fn)(state.params, x)",
    "pmap-of-a-lambda": "def f(xs):\n    return jax.pmap(lambda x: x * 2)(xs)",
    "from-jax-import-jit-as": "from jax import jit as J\ndef f(x):\n    return J(lambda x: x + 1)(x)",
    "jit-through-a-module-alias": "compile_now = jax.jit\ndef f(x):\n    return compile_now(lambda x: x + 1)(x)",
    "jit-as-a-local-value": "def f(x):\n    wrap = jax.jit\n    return wrap(lambda x: x + 1)(x)",
    "partial-jit-as-a-local-value": "def f(x):\n    wrap = partial(jax.jit, donate_argnums=())\n    return wrap(lambda x: x)(x)",
    "partial-jit-at-module-level": "WRAP = partial(jax.jit, donate_argnums=())\ndef f(x):\n    return WRAP(lambda x: x)(x)",
    "jit-kept-in-a-list": "TOOLS = [jax.jit]\ndef f(x):\n    return TOOLS[0](lambda x: x + 1)(x)",
    "the-module-as-a-local-value": "def f(x):\n    m = jax\n    return m.jit(lambda x: x + 1)(x)",
    "the-module-handed-to-a-helper": (
        "def helper(library, x):\n    return library.jit(lambda y: y)(x)\ndef f(x):\n    return helper(jax, x)"
    ),
    "getattr-of-jit": 'def f(x):\n    return getattr(jax, "jit")(lambda x: x + 1)(x)',
    "attrgetter-of-jit": 'def f(x):\n    return operator.attrgetter("jit")(jax)(lambda x: x + 1)(x)',
    "private-path-to-jit": "from jax._src.api import jit\ndef f(x):\n    return jit(lambda x: x + 1)(x)",
    "global-rebound-function": ("G = None\ndef f(x):\n    global G\n    G = lambda x: x + 1\n    return jax.jit(G)(x)"),
    "clear-caches-per-call": "_g = jax.jit(_linear)\ndef f(x, W, b):\n    jax.clear_caches()\n    return _g(x, W, b)",
    "clear-caches-while-tracing": "@jax.jit\ndef f(x):\n    jax.clear_caches()\n    return x + 1",
    "clear-cache-of-a-function": "_g = jax.jit(_linear)\ndef f(x, W, b):\n    _g.clear_cache()\n    return _g(x, W, b)",
    "clear-caches-aliased-at-module-level": "FORGET = jax.clear_caches\ndef f(x):\n    FORGET()\n    return x",
    "aot-lower-compile-per-call": "_g = jax.jit(_linear)\ndef f(x, W, b):\n    return _g.lower(x, W, b).compile()(x, W, b)",
    "aot-trace-per-call": "_g = jax.jit(_linear)\ndef f(x, W, b):\n    return _g.trace(x, W, b).lower().compile()(x, W, b)",
    "optimizer-built-and-jitted-per-call": (
        "def make(tx):\n    def step(p, g):\n        u, _ = tx.update(g, tx.init(p), p)\n        return optax.apply_updates(p, u)\n"
        "    return step\n"
        "def f(params, grads, lr):\n    return jax.jit(make(optax.sgd(lr)))(params, grads)"
    ),
    "helper-called-by-the-function-jits-per-call": (
        "def helper(x):\n    return jax.jit(lambda x: x * 2)(x)\ndef f(x):\n    return helper(x) + 1"
    ),
    "helper-that-jits-its-argument": "def my_jit(fn):\n    return jax.jit(fn)\ndef f(x):\n    return my_jit(_linear)(x, x, x)",
    "eager-scan-of-a-lambda": "def f(xs):\n    return jax.lax.scan(lambda c, x: (c + x, c), 0.0, xs)[1]",
    "eager-fori-loop-of-a-lambda": "from jax import lax\ndef f(x):\n    return lax.fori_loop(0, 3, lambda i, x: x * 2, x)",
    "eval-shape-of-a-lambda": "def f(x):\n    jax.eval_shape(lambda x: x, x)\n    return x",
    "config-changed-per-call": 'def f(x):\n    jax.config.update("jax_enable_x64", False)\n    return x',
    "method-of-a-module-level-object": (
        "class Trainer:\n    def step(self, x):\n        return jax.jit(lambda x: x + 1)(x)\n"
        "trainer = Trainer()\nf = trainer.step"
    ),
    "module-level-lambda-that-jits": "f = lambda x: jax.jit(lambda y: y + 1)(x)",
    "eager-lax-reduce-of-a-lambda": "def f(x):\n    return jax.lax.reduce(x, 0.0, lambda a, b: a + b, (0,))",
    "eager-checkpoint-of-a-nested-def": (
        "def f(x):\n    def g(y):\n        return jnp.sin(y)\n    return jax.checkpoint(g)(x)"
    ),
    "eager-remat-of-a-vmap-made-per-call": ("def f(x):\n    g = jax.vmap(jnp.sin)\n    return jax.remat(g)(x)"),
    "piecewise-with-lambdas": "def f(x):\n    return jnp.piecewise(x, [x < 0], [lambda v: -v, lambda v: v])",
    "host-callback-that-jits-on-every-call": (
        "def _log(x):\n    jax.jit(lambda y: y)(x)\n@jax.jit\ndef f(x):\n    jax.debug.callback(_log, x)\n    return x"
    ),
    "host-callback-lambda-that-jits": (
        "@jax.jit\ndef f(x):\n    jax.debug.callback(lambda v: jax.jit(lambda y: y)(v), x)\n    return x"
    ),
}


@pytest.mark.parametrize("source", RETRACING.values(), ids=RETRACING.keys())
def test_a_python_side_cache_miss_is_found(source):
    assert causes(source), source


CHAINED = {
    "new-optimizer-each-step": (
        "@jax.jit\ndef f(state, batch):\n    return state.apply_gradients(grads=state.params, tx=optax.sgd(0.3))"
    ),
    "new-apply-fn-each-step": (
        "@jax.jit\ndef f(state, batch):\n    return state.replace(apply_fn=functools.partial(state.apply_fn))"
    ),
    "new-apply-fn-lambda": "@jax.jit\ndef f(state, batch):\n    return state.replace(apply_fn=lambda *a: state.apply_fn(*a))",
    "new-optimizer-through-a-dict": (
        "@jax.jit\ndef f(state, batch):\n    return state.replace(**{'tx': optax.sgd(0.1)})"
    ),
    "state-built-positionally": (
        "@jax.jit\ndef f(state, batch):\n    return train_state.TrainState(state.step, lambda *a: 0, state.params, "
        "state.tx, state.opt_state)"
    ),
    "optimizer-made-in-a-helper": (
        "def fresh(state):\n    tx = optax.sgd(0.1)\n    return state.replace(tx=tx)\n"
        "@jax.jit\ndef f(state, batch):\n    return fresh(state)"
    ),
    "static-int-step-counter": (
        "class CountingState(train_state.TrainState):\n    step: int = struct.field(pytree_node=False)\n"
        "@jax.jit\ndef f(state, batch):\n    return CountingState(step=1, apply_fn=state.apply_fn, params=state.params, "
        "tx=state.tx, opt_state=state.opt_state)"
    ),
}


@pytest.mark.parametrize("source", CHAINED.values(), ids=CHAINED.keys())
def test_a_returned_state_with_new_static_parts_is_found_in_a_chained_loop(source):
    assert causes(source, chained=True), source


HONEST = {
    "jit-decorator": "@jax.jit\ndef f(x, W, b):\n    return x @ W + b",
    "jit-by-assignment": "f = jax.jit(_linear)",
    "jit-of-a-lambda-at-module-level": "f = jax.jit(lambda x: jax.jit(lambda y: y)(x))",
    "partial-jit-decorator-with-static-argnames": (
        "@partial(jax.jit, static_argnames=('multiple',))\ndef f(x, multiple):\n    return x[:multiple]"
    ),
    "functools-partial-pmap-decorator": (
        "@functools.partial(jax.pmap, axis_name='d', in_axes=(0, None))\ndef f(x, lr):\n    return x * lr"
    ),
    "jit-of-a-module-level-function-inside-the-body": "def f(x, W, b):\n    return jax.jit(_linear)(x, W, b)",
    "pmap-of-a-module-level-function-inside-the-body": "def f(x, W, b):\n    return jax.pmap(_linear)(x, W, b)",
    "jit-of-a-library-function-inside-the-body": "def f(x):\n    return jax.jit(jnp.sum)(x)",
    "tree-map-and-vectorize-of-lambdas-per-call": (
        "def f(params, grads, x):\n    jnp.vectorize(lambda v: v * 2)(x)\n"
        "    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)"
    ),
    "value-and-grad-of-a-nested-def-per-call": (
        "def f(params, x, y):\n    def loss(p):\n        return _loss(p, x, y)\n"
        "    return jax.value_and_grad(loss)(params)"
    ),
    "vmap-and-grad-per-call": "def f(params, xs, ys):\n    return jax.vmap(jax.grad(_loss), in_axes=(None, 0, 0))(params, xs, ys)",
    "vmap-at-module-level": "f = jax.vmap(jax.grad(_loss), in_axes=(None, 0, 0))",
    "lambdas-and-scans-inside-jit": (
        "@jax.jit\ndef f(xs):\n    g = jax.jit(lambda x: x * 2)\n"
        "    return jax.lax.scan(lambda c, x: (c + g(x), c), 0.0, xs)[1]"
    ),
    "string-lower-and-re-compile": (
        "import re\nPATTERN = re.compile('a')\ndef f(x, name='A'):\n    name.lower()\n    return x"
    ),
    "apply-gradients-and-replace": (
        "@jax.jit\ndef f(state, batch):\n    grads = jax.grad(lambda p: _loss(p, *batch))(state.params)\n"
        "    new = state.apply_gradients(grads=grads)\n    return new.replace(step=new.step, params=new.params)"
    ),
    "a-state-built-from-the-given-static-parts": (
        "TX = optax.sgd(0.1)\n@jax.jit\ndef f(state, batch):\n    return train_state.TrainState(step=state.step + 1, "
        "apply_fn=state.apply_fn, params=state.params, tx=state.tx, opt_state=state.opt_state).replace(tx=TX)"
    ),
    "module-level-jitted-helper-called-per-call": (
        "_acc = jax.jit(lambda a, b: jnp.mean(a == b))\ndef f(x, y):\n    return _acc(x, y)"
    ),
    "a-state-of-the-given-class-built-positionally": (
        "@jax.jit\ndef f(state, batch):\n    return type(state)(state.step + 1, state.apply_fn, "
        "optax.apply_updates(state.params, state.params), state.tx, state.opt_state)"
    ),
    "step-int-python-at-first": "@jax.jit\ndef f(state, batch):\n    return state.replace(step=state.step + 1)",
    "lazily-cached-module-level-jit": (
        "_CACHED = None\ndef f(x):\n    global _CACHED\n    if _CACHED is None:\n        _CACHED = jax.jit(_linear)\n"
        "    return _CACHED(x, x, x)"
    ),
}


@pytest.mark.parametrize("source", HONEST.values(), ids=HONEST.keys())
def test_honest_forms_have_no_cause(source):
    assert causes(source, chained=True) == [], source


def test_causes_name_their_line_and_what_to_change():
    found = analyse(PRELUDE + RETRACING["jit-of-a-lambda"], "f")
    (cause,) = found.causes
    assert cause.line == PRELUDE.count("\n") + 2
    assert "jax.jit of a lambda, made on every call" in str(cause)


def test_jitted_at_module_level_and_its_static_arguments_are_read():
    decorated = analyse(PRELUDE + HONEST["partial-jit-decorator-with-static-argnames"], "f")
    assert decorated.jitted and decorated.static == ("multiple",)
    assigned = analyse(PRELUDE + "f = jax.jit(_linear, static_argnums=(1,))", "f")
    assert assigned.jitted and assigned.static == (1,)
    assert analyse(PRELUDE + "f = partial(jax.jit, static_argnames='n')(_linear)", "f").static == ("n",)
    assert analyse(PRELUDE + "OPTIONS = {}\nf = jax.jit(_linear, **OPTIONS)", "f").static is None
    plain = analyse(PRELUDE + HONEST["vmap-and-grad-per-call"], "f")
    assert plain.found and not plain.jitted


def test_a_later_binding_wins():
    assert analyse(PRELUDE + "def f(x):\n    return x\nf = jax.jit(f)", "f").jitted
    assert not analyse(PRELUDE + "f = jax.jit(_linear)\ndef f(x):\n    return x", "f").jitted


def test_what_does_not_parse_or_is_missing_is_not_found():
    assert not analyse("def f(:\n", "f").found
    assert not analyse(PRELUDE, "missing").found


COURSE = {
    "vmap_linear": ("linear", "batched_linear", "per_example_grads"),
    "training": ("train_step", "eval_step"),
    "batchnorm": ("train_step_bn", "eval_step_bn"),
    "jit_static": ("pad_to_multiple", "standardize_logged"),
    "pytrees": ("sgd_update",),
    "dropout_rngs": ("train_step_dropout", "eval_step_dropout"),
    "parallel": ("all_device_mean", "pmap_sgd_step", "sharded_sgd_step"),
}


@pytest.mark.parametrize("folder", ["solutions", "exercises"])
@pytest.mark.parametrize("module", COURSE)
def test_the_references_and_stubs_have_no_cause(folder, module):
    source = (ROOT / folder / f"{module}.py").read_text(encoding="utf-8")
    for function in COURSE[module]:
        found = analyse(source, function, chained=True)
        assert found.found and found.causes == [], (function, found.causes)
        if folder == "solutions":
            assert found.jitted == (module not in ("vmap_linear",)), function
