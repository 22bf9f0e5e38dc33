"""The jit_static checks judge right: traced shapes, Python control flow, unrolled loops, module state,
trace-time prints and non-differentiable clipping fail with the right message; other correct answers
(static_argnums, lax.cond, fori_loop, rsqrt, jax.jit assignments) pass."""

import pytest
from support import assert_accepted, assert_rejected, grade, with_function

MODULE = "jit_static"
PRELUDE = "import functools\nimport math\n\nimport numpy as np\n"


CORRECT_VARIANTS = [
    pytest.param(
        "pad_to_multiple",
        """
        @functools.partial(jax.jit, static_argnums=1)
        def pad_to_multiple(x, multiple):
            n = x.shape[0]
            N = math.ceil(n / multiple) * multiple
            padding = [(0, N - n)] + [(0, 0)] * (x.ndim - 1)
            return jnp.pad(x, padding), jnp.arange(N) < n
    """,
        id="static_argnums-and-jnp-pad",
    ),
    pytest.param(
        "pad_to_multiple",
        """
        def _pad(x, multiple):
            n = x.shape[0]
            N = int(np.ceil(n / multiple)) * multiple
            zeros = jnp.zeros((N - n,) + x.shape[1:], dtype=x.dtype)
            return jnp.concatenate([x, zeros]), jnp.concatenate([jnp.ones(n, bool), jnp.zeros(N - n, bool)])
        pad_to_multiple = jax.jit(_pad, static_argnames="multiple")
    """,
        id="jit-assignment-numpy-ceil-concatenate",
    ),
    pytest.param(
        "pad_to_multiple",
        """
        @functools.partial(jax.jit, static_argnames=("multiple",))
        def pad_to_multiple(x, multiple):
            n = x.shape[0]
            N = n + (-n) % multiple
            pad_width = ((0, N - n),) + ((0, 0),) * (x.ndim - 1)
            return jnp.pad(x, pad_width, constant_values=0), jnp.arange(N) < n
    """,
        id="modulo-and-pad-width-tuple",
    ),
    pytest.param(
        "standardize_logged",
        """
        @jax.jit
        def standardize_logged(x):
            mean, std = jnp.mean(x), jnp.std(x)
            jax.debug.print("mean={m} std={s}", m=mean, s=std, ordered=True)
            return (x - mean) / std
    """,
        id="ordered-debug-print",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            sq = jnp.sum(x * x)
            return jax.lax.cond(sq > max_norm**2, lambda x: x * (max_norm / jnp.sqrt(jnp.sum(x * x))), lambda x: x, x)
    """,
        id="lax-cond-sqrt-inside",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            sq = jnp.vdot(x, x)
            clip = sq > jnp.square(max_norm)
            scale = max_norm * jax.lax.rsqrt(jnp.where(clip, sq, 1.0))
            return jnp.where(clip, scale, 1.0) * x
    """,
        id="double-where-rsqrt",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            sq = jnp.sum(x**2)
            norm = jnp.sqrt(jnp.where(sq > 0, sq, 1.0))  # safe only at 0: finite gradient there too
            return jnp.where(sq > max_norm**2, x * (max_norm / norm), x)
    """,
        id="safe-where-at-zero-only",
    ),
    pytest.param(
        "newton_sqrt",
        """
        @functools.partial(jax.jit, static_argnames=("n_steps",))
        def newton_sqrt(a, n_steps):
            def body(i, carry):
                x, history = carry
                x = 0.5 * (x + a / x)
                return x, history.at[i].set(x)
            return jax.lax.fori_loop(0, n_steps, body, (a, jnp.zeros((n_steps,) + a.shape, a.dtype)))
    """,
        id="fori-loop-into-array",
    ),
    pytest.param(
        "newton_sqrt",
        """
        @functools.partial(jax.jit, static_argnums=(1,))
        def newton_sqrt(a, n_steps):
            _, history = jax.lax.scan(lambda x, _: ((x + a / x) / 2,) * 2, a, length=n_steps)
            return history[-1], history
    """,
        id="scan-static_argnums",
    ),
    pytest.param(
        "standardize_logged",
        """
        @jax.jit
        def standardize_logged(x):
            centered = x - x.mean()
            std = jnp.sqrt(jnp.mean(centered ** 2))
            jax.debug.print("mean={m} std={s}", s=std, m=jnp.mean(x))
            return centered / std
    """,
        id="hand-written-std",
    ),
    pytest.param(
        "standardize_logged",
        """
        def _standardize(x):
            mean, std = jnp.mean(x), jnp.std(x)
            jax.debug.print("mean={} std={}", mean, std)
            return (x - mean) / std
        standardize_logged = jax.jit(_standardize)
    """,
        id="positional-placeholders",
    ),
]


@pytest.mark.parametrize("function, replacement", CORRECT_VARIANTS)
def test_correct_variant_written_differently_passes(pytester, function, replacement):
    source = PRELUDE + with_function(MODULE, replacement)
    result = grade(pytester, MODULE, source, only=function)[function]
    assert_accepted(result)


WRONG = [
    # (function, replacement, regex the message must match, -k expression of the checks to run)
    pytest.param(
        "pad_to_multiple",
        """
        @jax.jit
        def pad_to_multiple(x, multiple):
            n = x.shape[0]
            N = -(-n // multiple) * multiple
            return jnp.zeros((N,) + x.shape[1:], x.dtype).at[:n].set(x), jnp.arange(N) < n
     """,
        r"pad_to_multiple\(x, 3\) raised TypeError: Shapes must be 1D sequences of concrete values(.*\n)*.*static_argnames",
        "pad_to_multiple and static",
        id="multiple-traced",
    ),
    pytest.param(
        "pad_to_multiple",
        """
        @functools.partial(jax.jit, static_argnames="multiple")
        def pad_to_multiple(x, multiple):
            n = x.shape[0]
            N = int(jnp.ceil(n / multiple)) * multiple
            return jnp.zeros((N,) + x.shape[1:], x.dtype).at[:n].set(x), jnp.arange(N) < n
     """,
        r"raised ConcretizationTypeError(.*\n)*.*never with jnp",
        "pad_to_multiple and static",
        id="jnp-ceil-for-N",
    ),
    pytest.param(
        "pad_to_multiple",
        """
        def pad_to_multiple(x, multiple):
            n = x.shape[0]
            N = -(-n // multiple) * multiple
            return jnp.zeros((N,) + x.shape[1:], x.dtype).at[:n].set(x), jnp.arange(N) < n
     """,
        r"pad_to_multiple is not a jax.jit function",
        "pad_to_multiple and jitted",
        id="not-jitted",
    ),
    pytest.param(
        "pad_to_multiple",
        """
        def pad_to_multiple(x, multiple):
            @jax.jit
            def pad(x):
                n = x.shape[0]
                N = -(-n // multiple) * multiple
                return jnp.zeros((N,) + x.shape[1:], x.dtype).at[:n].set(x), jnp.arange(N) < n
            return pad(x)
     """,
        r"traced \d+ and compiled \d+ more time",
        "pad_to_multiple and retrace",
        id="jit-inside-per-call",
    ),
    pytest.param(
        "pad_to_multiple",
        """
        @functools.partial(jax.jit, static_argnames="multiple")
        def pad_to_multiple(x, multiple):
            n = x.shape[0]
            N = -(-n // multiple) * multiple
            return jnp.zeros((N,) + x.shape[1:], jnp.float32).at[:n].set(x), jnp.arange(N) < n
     """,
        r"has dtype float32, expected int32",
        "pad_to_multiple and matches_reference",
        id="dtype-lost",
    ),
    pytest.param(
        "pad_to_multiple",
        """
        @functools.partial(jax.jit, static_argnames="multiple")
        def pad_to_multiple(x, multiple):
            n = x.shape[0]
            N = (n // multiple + 1) * multiple
            return jnp.zeros((N,) + x.shape[1:], x.dtype).at[:n].set(x), jnp.arange(N) < n
     """,
        r"does not have the structure|has shape \(\d+(, 2)?,?\), expected",
        "pad_to_multiple and matches_reference",
        id="always-adds-a-block",
    ),
    pytest.param(
        "pad_to_multiple",
        """
        @functools.partial(jax.jit, static_argnames="multiple")
        def pad_to_multiple(x, multiple):
            n = x.shape[0]
            N = -(-n // multiple) * multiple
            return jnp.pad(x, (0, N - n)), jnp.arange(N) < n
     """,
        r"has shape \(8, 4\), expected \(8, 3\)|does not have the structure",
        "pad_to_multiple and matches_reference",
        id="pads-every-axis",
    ),
    pytest.param(
        "pad_to_multiple",
        """
        @functools.partial(jax.jit, static_argnames="multiple")
        def pad_to_multiple(x, multiple):
            n = x.shape[0]
            N = -(-n // multiple) * multiple
            padded = jnp.zeros((N,) + x.shape[1:], jnp.float32).at[:n].set(x.astype(jnp.float32))
            return padded.astype(x.dtype), jnp.arange(N) < n
     """,
        r"pad_to_multiple: .*differs from the reference",
        "pad_to_multiple and matches_reference",
        id="computes-in-float32-and-casts-back",
    ),
    pytest.param(
        "pad_to_multiple",
        """
        @functools.partial(jax.jit, static_argnames="multiple")
        def pad_to_multiple(x, multiple):
            n = x.shape[0]
            N = -(-n // multiple) * multiple
            if N == n:
                N = n + multiple  # a block of padding whenever none is needed
            return jnp.zeros((N,) + x.shape[1:], x.dtype).at[:n].set(x), jnp.arange(N) < n
     """,
        r"has shape \(\d+(, \d+)*,?\), expected|does not have the structure",
        "pad_to_multiple and matches_reference",
        id="extra-block-when-divisible",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            norm = jnp.sqrt(jnp.sum(x ** 2))
            if norm > max_norm:
                return x * (max_norm / norm)
            return x
     """,
        r"cannot be traced by JAX: it uses a traced value in Python control flow",
        "clip_by_norm and matches_reference",
        id="python-if",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            norm = jnp.sqrt(jnp.sum(x ** 2))
            return jnp.where(norm > max_norm, x * (max_norm / norm), x)
     """,
        r"the gradient at x = 0 is \[nan nan nan\], not finite(.*\n)*.*second jnp.where",
        "clip_by_norm and finite",
        id="single-where",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            norm = jnp.sqrt(jnp.sum(x ** 2))
            return jax.lax.cond(norm > max_norm, lambda x: x * (max_norm / norm), lambda x: x, x)
     """,
        r"gradient (at x = 0|of row 0).*nan",
        "clip_by_norm and finite",
        id="lax-cond-norm-outside",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            sq = jnp.sum(x ** 2)
            safe = jnp.where(sq > max_norm ** 2, sq, 1.0)
            scale = jax.lax.stop_gradient(jnp.where(sq > max_norm ** 2, max_norm / jnp.sqrt(safe), 1.0))
            return x * scale
     """,
        r"gradient differs from the central differences(.*\n)*.*checked: the gradient of sum\(clip_by_norm\(x, 1.0\)\) equals the slope",
        "clip_by_norm and slope",
        id="stops-the-gradient-of-the-scale",
    ),
    # max_norm * 2 for max_norm ** 2: clips 1.2 under max_norm 1 (1.44 > 2 is false) and 3 under max_norm 4
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            sq = jnp.sum(x ** 2)
            safe = jnp.where(sq > max_norm * 2, sq, 1.0)
            return jnp.where(sq > max_norm * 2, x * (max_norm / jnp.sqrt(safe)), x)
     """,
        r"differs from the reference",
        "clip_by_norm and matches_reference",
        id="twice-max-norm",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @functools.partial(jax.jit, static_argnames="max_norm")
        def clip_by_norm(x, max_norm):
            sq = jnp.sum(x ** 2)
            safe = jnp.where(sq > max_norm ** 2, sq, 1.0)
            return jnp.where(sq > max_norm ** 2, x * (max_norm / jnp.sqrt(safe)), x)
     """,
        r"for max_norm=1.0 \(a float\) does not take max_norm as an argument: max_norm is a static argument",
        "clip_by_norm and traced",
        id="static-max-norm",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            sq = jnp.sum(x ** 2)
            safe = jnp.where(sq > max_norm, sq, 1.0)
            return jnp.where(sq > max_norm, x * (max_norm / jnp.sqrt(safe)), x)
     """,
        r"clip_by_norm: result differs from the reference",
        "clip_by_norm and matches_reference",
        id="squared-norm-against-max-norm",
    ),
    pytest.param(
        "newton_sqrt",
        """
        @functools.partial(jax.jit, static_argnames="n_steps")
        def newton_sqrt(a, n_steps):
            x, history = a, []
            for _ in range(n_steps):
                x = (x + a / x) / 2
                history.append(x)
            return x, jnp.stack(history)
     """,
        r"grows with the size of n_steps \(3: \d+ operations, 30: \d+ operations\)(.*\n)*.*jax.lax.scan",
        "newton_sqrt and grow",
        id="python-loop",
    ),
    pytest.param(
        "newton_sqrt",
        """
        HISTORY = []
        @functools.partial(jax.jit, static_argnames="n_steps")
        def newton_sqrt(a, n_steps):
            HISTORY.clear()
            def body(i, x):
                x = (x + a / x) / 2
                HISTORY.append(x)
                return x
            x = jax.lax.fori_loop(0, n_steps, body, a)
            return x, jnp.stack([x] * n_steps)
     """,
        r"module-level variable 'HISTORY'|leaked a tracer",
        "newton_sqrt and module_state",
        id="global-history",
    ),
    pytest.param(
        "newton_sqrt",
        """
        @jax.jit
        def newton_sqrt(a, n_steps):
            def step(x, _):
                x = (x + a / x) / 2
                return x, x
            return jax.lax.scan(step, a, None, length=n_steps)
     """,
        r"cannot be compiled with jax.jit: it needs a concrete value(.*\n)*.*n_steps decides the shape of history",
        "newton_sqrt and static_n_steps",
        id="n-steps-traced",
    ),
    pytest.param(
        "newton_sqrt",
        """
        def newton_sqrt(a, n_steps):
            step = lambda x, _: ((x + a / x) / 2,) * 2
            return jax.jit(lambda a: jax.lax.scan(step, a, None, length=n_steps))(a)
     """,
        r"newton_sqrt is not a jax.jit function(.*\n)*.*static_argnames=\('n_steps',\)",
        "newton_sqrt and static_n_steps",
        id="a-new-jit-on-every-call",
    ),
    pytest.param(
        "newton_sqrt",
        """
        @functools.partial(jax.jit, static_argnames="n_steps")
        def newton_sqrt(a, n_steps):
            def step(x, _):
                new = (x + a / x) / 2
                return new, x
            return jax.lax.scan(step, a, None, length=n_steps)
     """,
        r"newton_sqrt: \(x_n, history\)\[1\] differs from the reference",
        "newton_sqrt and matches_reference",
        id="history-off-by-one",
    ),
    pytest.param(
        "newton_sqrt",
        """
        @functools.partial(jax.jit, static_argnames="n_steps")
        def newton_sqrt(a, n_steps):
            def step(x, _):
                x = (x + a / x) / 2
                return x, x
            x_n, history = jax.lax.scan(step, a, None, length=n_steps)
            return x_n, history.squeeze()
     """,
        r"newton_sqrt: \(x_n, history\)\[1\] .*shape|does not have the structure|has shape",
        "newton_sqrt and matches_reference",
        id="history-squeezed-without-an-axis",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            sq = jnp.sum(x ** 2, axis=-1, keepdims=True)
            safe = jnp.where(sq > max_norm ** 2, sq, 1.0)
            return jnp.where(sq > max_norm ** 2, x * (max_norm / jnp.sqrt(safe)), x)
     """,
        r"clip_by_norm: result differs from the reference|cannot|raised",
        "clip_by_norm and matches_reference",
        id="norm-of-each-row",
    ),
    pytest.param(
        "clip_by_norm",
        """
        @jax.jit
        def clip_by_norm(x, max_norm):
            sq = jnp.einsum("...i,...i->", x, x)  # needs an axis: a 0-d x has none
            safe = jnp.where(sq > max_norm ** 2, sq, 1.0)
            return jnp.where(sq > max_norm ** 2, x * (max_norm / jnp.sqrt(safe)), x)
     """,
        r"clip_by_norm.*raised|cannot",
        "clip_by_norm and matches_reference",
        id="sum-of-squares-over-the-last-axis-only",
    ),
    pytest.param(
        "standardize_logged",
        """
        @jax.jit
        def standardize_logged(x):
            mean, std = jnp.mean(x), jnp.std(x)
            print(f"mean={mean} std={std}")
            return (x - mean) / std
     """,
        r"warm call 1 of 2 printed 0 lines(.*\n)*.*jax.debug.print",
        "standardize_logged and one_line",
        id="python-print",
    ),
    pytest.param(
        "standardize_logged",
        """
        @jax.jit
        def standardize_logged(x):
            mean, std = jnp.mean(x), jnp.std(x)
            jax.debug.print("mean={m}", m=mean)
            jax.debug.print("std={s}", s=std)
            return (x - mean) / std
     """,
        r"printed 2 lines",
        "standardize_logged and one_line",
        id="two-debug-prints",
    ),
    pytest.param(
        "standardize_logged",
        """
        @jax.jit
        def standardize_logged(x):
            mean, std = jnp.mean(x), jnp.std(x, ddof=1)
            jax.debug.print("mean={m} std={s}", m=mean, s=std)
            return (x - mean) / std
     """,
        r"printed std is .*, expected(.*\n)*.*population",
        "standardize_logged and mean_and_std",
        id="sample-std",
    ),
    pytest.param(
        "standardize_logged",
        """
        @jax.jit
        def standardize_logged(x):
            mean, std = jnp.mean(x), jnp.std(x)
            jax.debug.print("mean: {m}, std: {s}", m=mean, s=std)
            return (x - mean) / std
     """,
        r"is not `mean=<number> std=<number>`",
        "standardize_logged and mean_and_std",
        id="other-format",
    ),
    pytest.param(
        "standardize_logged",
        """
        @jax.jit
        def standardize_logged(x):
            mean, std = jnp.mean(x), jnp.std(x)
            print("standardize_logged traced for", x.shape)
            jax.debug.print("mean={m} std={s}", m=mean, s=std)
            return (x - mean) / std
     """,
        r"the first call \(the one that traces\) printed 2 lines(.*\n)*.*debugging prints",
        "standardize_logged and one_line",
        id="debugging-print-while-tracing",
    ),
    pytest.param(
        "standardize_logged",
        """
        @jax.jit
        def standardize_logged(x):
            mean = jnp.mean(x)
            std = jnp.sqrt(jnp.sum((x - mean) ** 2) / 5)  # the population std of 6 entries only
            jax.debug.print("mean={m} std={s}", m=mean, s=std)
            return (x - mean) / std
     """,
        r"standardize_logged: result differs from the reference",
        "standardize_logged and matches_reference",
        id="size-hard-coded",
    ),
]


@pytest.mark.parametrize("function, replacement, pattern, checks", WRONG)
def test_wrong_implementation_fails_with_the_right_message(pytester, function, replacement, pattern, checks):
    results = grade(pytester, MODULE, PRELUDE + with_function(MODULE, replacement), only=checks)
    assert_rejected(results[function], pattern)
