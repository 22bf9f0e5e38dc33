"""Checks for module 8, ``jit_static``: run ``pytest exercises/test_jit_static.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``.

- Every function here is itself a ``jax.jit`` function, and the checks call
  it as it is. Traces are counted two ways: JAX's own trace events
  (``tracing.TraceCounter``: nothing at all may trace once warm) and runs of
  the function's Python body (``vmapped.record_calls``: how many times the
  function itself was traced for a new static argument).
- ``pad_to_multiple`` is called with ``multiple`` by position and by
  keyword; each style has its own cache entry in ``jax.jit``, so both are
  warmed before anything is counted.
- ``clip_by_norm``'s gradient is taken at ``x = 0``, alone and under
  ``jax.vmap`` over a batch with zero rows, where a single ``jnp.where``
  gives NaN.
- ``standardize_logged``'s output is captured after the result is ready and
  JAX's pending effects have run (``jax.effects_barrier()``), since
  ``jax.debug.print`` prints from a host callback; the printed lines are
  recorded as data and judged on the grader's side against its own inputs.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from autograder.checks import output, programs, purity, retraces, slopes, structure, tracing, values, vmapped
from autograder.checks.strategies import float32_arrays, floats, integers
from autograder.core.failures import CheckFailure

correctness = pytest.mark.correctness
program = pytest.mark.decided("program")  # the grader runs and inspects the program the function compiles to
# Retracing, decided from the program (nothing that changes is baked into it) and the source
# (autograder.core.retrace_sources: no jax.jit made per call, no cache cleared; "jitted_without_retraces": a jax.jit
# function made at module level, traced once per static value); the count of traces is observed first.
one_program = pytest.mark.decided("program", "retraces")
one_jit_function = pytest.mark.decided("program", "jitted_without_retraces")
# Decided on the trusted side from recorded values (issue 42); what values cannot show (module state) is a check
# of its own, observed in the student's process.
values_decided = pytest.mark.decided("values")


def named(fn, name):
    fn.__name__ = fn.__qualname__ = name
    return fn


def body_runs(fn, run):
    """How many times ``run()`` executed ``fn``'s Python body (each run is one trace of a jitted ``fn``)."""
    _, runs = vmapped.record_calls(fn, run)
    return len(runs)


# pad_to_multiple ------------------------------------------------------------

# Sizes of 1, primes, sizes that divide and do not divide, ranks 1 to 3 (every one needs padding for some multiple).
PAD_SHAPES = ((1,), (5,), (6, 2), (7, 3), (1, 4), (5, 2, 3))
PAD_MULTIPLES = (1, 3, 4)
# Used by test_pad_to_multiple_traces_once_per_new_multiple only (which clears the cache first anyway).
FRESH_SHAPE, FRESH_MULTIPLES = (9, 2), (4, 7)

STATIC_ADVICE = (
    "multiple decides the shape of the result, so jax.jit must see it as a Python int: declare it static "
    "(functools.partial(jax.jit, static_argnames=('multiple',)) works for both call styles), and compute N "
    "with Python integers (-(-n // multiple) * multiple or math.ceil), never with jnp"
)


def pad_inputs():
    shapes = st.sampled_from(PAD_SHAPES)
    dtypes = st.sampled_from([np.float32, np.int32, np.bool_])
    return st.tuples(shapes, dtypes, integers(0, 2**16)).map(lambda t: make_pad_input(*t))


def make_pad_input(shape, dtype, seed):
    """Floats of both signs; int32 over its whole range (values above 2**24 do not survive a float32 round trip,
    and the extremes are included); booleans."""
    rng = np.random.RandomState(seed)
    if np.dtype(dtype) == np.int32:
        info = np.iinfo(np.int32)
        x = rng.randint(info.min, info.max, size=shape, dtype=np.int64)
        x.flat[0] = info.max
        x.flat[-1] = info.min
        return x.astype(np.int32)
    if np.dtype(dtype) == np.bool_:
        return rng.normal(size=shape) > 0
    return (rng.normal(size=shape) * 10).astype(dtype)


def own_program(
    fn,
    *args,
    name,
    reference_fn,
    check=None,
    advice=None,
    static_argnums=(),
    static_argnames=(),
    explain=True,
    **kwargs,
):
    """The program of the student's own jax.jit function (only a jitted function has one), which must give the
    reference's values on the check's arguments."""
    expected = reference_fn(*args, **kwargs)
    compiled = programs.program_of(
        fn,
        *args,
        as_is=True,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        explain=explain,
        result_like=expected,
        name=name,
        check=check or f"{name} is compiled with jax.jit",
        advice=advice
        or f"decorate it with @jax.jit, or write `{name} = jax.jit(...)` at module level, "
        "so that it is compiled once and reused on every call",
        **kwargs,
    )
    return compiled, expected


def call_pad(student, x, multiple, style):
    return pad_call(student.pad_to_multiple, x, multiple, style)


def pad_call(fn, x, multiple, style):
    return fn(x, multiple=multiple) if style == "keyword" else fn(x, multiple)


def pad_calls(xs, multiple, style):
    """The calls ``(args, kwargs)`` of ``pad_to_multiple`` on each of ``xs`` with ``multiple`` passed by ``style``."""
    return [((x, multiple), {}) if style == "position" else ((x,), {"multiple": multiple}) for x in xs]


def pad_static(style):
    """jit's static arguments for ``multiple`` passed by ``style``."""
    return {"static_argnums": (1,)} if style == "position" else {"static_argnames": ("multiple",)}


@correctness
@settings(max_examples=10)
@given(x=pad_inputs(), multiple=st.sampled_from(PAD_MULTIPLES))
@example(x=make_pad_input((7, 3), np.float32, 0), multiple=4)  # 2-D, padded: only the first axis grows
@example(x=make_pad_input((1, 4), np.int32, 1), multiple=3)  # one row; int32 beyond float32's 24-bit mantissa
@example(x=make_pad_input((5, 2, 3), np.bool_, 2), multiple=3)  # rank 3, booleans
def test_pad_to_multiple_matches_reference(student, reference, x, multiple):
    check = "pad_to_multiple(x, multiple) returns (x padded with zero rows to a multiple of `multiple`, mask)"
    got = values.assert_returns_tuple(
        student.pad_to_multiple(x, multiple), ("padded", "mask"), function="pad_to_multiple", check=check
    )
    values.assert_trees_close(got, reference.pad_to_multiple(x, multiple), name="(padded, mask)", check=check)


@program
def test_pad_to_multiple_is_jitted(student, reference):
    x = make_pad_input((5,), np.float32, 1)
    compiled, expected = own_program(
        student.pad_to_multiple,
        x,
        multiple=3,
        static_argnames=("multiple",),
        name="pad_to_multiple",
        reference_fn=reference.pad_to_multiple,
    )
    programs.assert_gives(compiled, x, expected=expected)


@program
@pytest.mark.parametrize("style", ["position", "keyword"])
def test_pad_to_multiple_takes_multiple_as_static_by_position_and_keyword(student, reference, style):
    """The student's own jitted function compiles with ``multiple`` passed either way (static: a Python int in the
    program), and its program gives the reference's values."""
    x = make_pad_input((5,), np.float32, 1)
    call = "pad_to_multiple(x, 3)" if style == "position" else "pad_to_multiple(x, multiple=3)"
    check = f"{call} works: multiple is static when passed by {style}"
    args, kwargs = ((x, 3), {}) if style == "position" else ((x,), {"multiple": 3})
    static = {"static_argnums": (1,)} if style == "position" else {"static_argnames": ("multiple",)}
    try:
        compiled, expected = own_program(
            student.pad_to_multiple,
            *args,
            **static,
            **kwargs,
            name="pad_to_multiple",
            reference_fn=reference.pad_to_multiple,
            check=check,
            advice=STATIC_ADVICE,
            explain=False,
        )
    except CheckFailure:
        raise
    except Exception as err:  # noqa: BLE001 - any failure here is reported with the error's first line
        first_line = (str(err).strip().splitlines() or [""])[0]
        raise CheckFailure(check, f"{call} raised {type(err).__name__}: {first_line}", STATIC_ADVICE) from None
    programs.assert_gives(compiled, x, expected=expected)


@one_program
def test_pad_to_multiple_does_not_retrace_once_warm(student, reference):
    """New values of x of one shape, multiple=3 by position and by keyword: no trace once warm, and one program
    (multiple static, x traced) gives the reference's values for every x."""
    xs = [np.random.RandomState(i).normal(size=(5,)).astype(np.float32) for i in range(6)]  # 2 warm, 3 counted, 1 told
    for style in ("position", "keyword"):
        retraces.observed(student.pad_to_multiple, style, pad_loop(xs, 3, style))
        retraces.assert_one_program(
            student.pad_to_multiple,
            pad_calls(xs, 3, style),
            [reference.pad_to_multiple(x, 3) for x in xs],
            name="pad_to_multiple",
            check=f"pad_to_multiple does not trace or compile again once warm (multiple passed by {style})",
            **pad_static(style),
        )


def pad_loop(xs, multiple, style):
    """The observed loop: no trace once warm on ``xs`` with ``multiple`` passed by ``style``."""

    def loop(pad):
        def call(x):
            return pad_call(pad, x, multiple, style)

        tracing.assert_no_retrace(named(call, "pad_to_multiple"), lambda i: (xs[i],))

    return loop


@one_jit_function
def test_pad_to_multiple_traces_once_per_new_multiple(student, reference):
    """Observed: one trace for a new multiple, none for one seen before. Decided: pad_to_multiple is a jax.jit function
    made at module level (the source), whose own program for a new multiple (static) gives the reference's values."""
    _, second = FRESH_MULTIPLES
    x = make_pad_input(FRESH_SHAPE, np.float32, 2)
    retraces.observed(student.pad_to_multiple, "new_multiple", lambda real: traces_once_per_new_multiple(real, x))
    retraces.assert_one_program(
        student.pad_to_multiple,
        pad_calls([x, x + 1], second, "position"),
        [reference.pad_to_multiple(x, second), reference.pad_to_multiple(x + 1, second)],
        as_is=True,
        name="pad_to_multiple",
        check="pad_to_multiple traces exactly once for a new multiple",
        static_argnums=(1,),
    )


def traces_once_per_new_multiple(pad, x):
    """The observed part, on the student's own function ``pad``: its Python body runs once for a new multiple (the
    first call with it), and never for a multiple and call style it has seen."""
    fn = purity.cold(pad)  # whatever ran before in this process
    first, second = FRESH_MULTIPLES
    for style in ("position", "keyword"):  # warm both call styles with the first multiple
        jax.block_until_ready(pad_call(pad, x, first, style))
    runs = body_runs(fn, lambda: jax.block_until_ready(pad_call(pad, x, second, "position")))
    if runs != 1:
        raise CheckFailure(
            "pad_to_multiple traces exactly once for a new multiple",
            f"pad_to_multiple's body ran {runs} times for the first call with multiple={second}",
            "a new static value is a new program: jax.jit traces the function once and caches it. "
            + (
                "Nothing traced: is multiple static, and the result's shape computed from it?"
                if runs == 0
                else "Every call traced again: is pad_to_multiple itself the jax.jit function (not a wrapper that calls jax.jit)?"
            ),
        )
    for multiple, style in ((second, "position"), (first, "position"), (first, "keyword")):
        runs = body_runs(fn, lambda: jax.block_until_ready(pad_call(pad, x, multiple, style)))  # noqa: B023 - called at once
        if runs:
            call = f"pad_to_multiple(x, {'multiple=' if style == 'keyword' else ''}{multiple})"
            raise CheckFailure(
                "pad_to_multiple traces nothing for a multiple it has seen before",
                f"{call} traced pad_to_multiple again ({runs} time(s)), although it was called with the same "
                "shape and multiple before",
                "jax.jit caches one program per static value: define pad_to_multiple once, at module level, "
                "with static_argnames, and create no jax.jit or function inside it",
            )


@values_decided
def test_pad_to_multiple_is_pure(student):
    x = make_pad_input((5,), np.int32, 3)
    purity.assert_pure_by_values(student.pad_to_multiple, x, 3)


@pytest.mark.decided("source", "module_state")
def test_pad_to_multiple_keeps_no_module_state(student):
    x = make_pad_input((5,), np.int32, 3)
    purity.assert_module_state_unchanged(student, purity.cold(student.pad_to_multiple), x, 3)


# clip_by_norm ---------------------------------------------------------------

CLIP_SHAPES = ((), (3,), (2, 3), (2, 1, 3))  # any shape: rank 0 to 3, one axis of size 1
DOUBLE_WHERE = (
    "at x = 0 the norm is sqrt(0), whose derivative is infinite; even in the branch jnp.where does not pick, "
    "0 * inf = NaN flows back. Take the square root of a safe value, safe = jnp.where(sq > max_norm ** 2, sq, 1.0) "
    "with sq = sum(x ** 2), and pick the result with a second jnp.where (or put the square root inside a lax.cond branch)"
)


def max_norms():
    return st.sampled_from([0.5, 1.0, 4.0]).flatmap(lambda m: st.sampled_from([m, np.float32(m), jnp.float32(m)]))


@correctness
@settings(max_examples=10)
@given(x=float32_arrays(CLIP_SHAPES, min_value=-3.0, max_value=3.0), max_norm=max_norms())
@example(x=np.zeros(3, np.float32), max_norm=1.0)
@example(x=np.array([[3.0, 0.0, 0.0], [0.0, 0.0, 0.0]], np.float32), max_norm=4.0)  # norm 3 < 4 although 3 ** 2 > 4
@example(x=np.array([1.2, 0.0, 0.0], np.float32), max_norm=1.0)  # 1 < norm 1.2 < sqrt(2): clipped
def test_clip_by_norm_matches_reference(student, reference, x, max_norm):
    values.assert_matches_reference(student.clip_by_norm, reference.clip_by_norm, x, max_norm)


@program
def test_clip_by_norm_is_jitted(student, reference):
    x = np.linspace(-2.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
    compiled, expected = own_program(
        student.clip_by_norm, x, jnp.float32(1.0), name="clip_by_norm", reference_fn=reference.clip_by_norm
    )
    programs.assert_gives(compiled, x, jnp.float32(1.0), expected=expected)


@program
@pytest.mark.parametrize("kind", ["python-float", "0-d-array"])
def test_clip_by_norm_max_norm_is_traced(student, reference, kind):
    """One program of the student's own jitted function, made for the first max_norm, takes max_norm as an
    argument and gives the reference's values for every other one: a new max_norm needs no new program."""
    x = np.linspace(-2.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
    make = float if kind == "python-float" else jnp.float32
    norms = [make(m) for m in (1.0, 2.5, 0.75, 3.25, 1.5)]
    check = "clip_by_norm does not trace again for a new max_norm"
    compiled, _ = own_program(
        student.clip_by_norm, x, norms[0], name="clip_by_norm", reference_fn=reference.clip_by_norm, check=check
    )
    if not compiled.keeps(1):
        raise CheckFailure(
            check,
            f"the program of clip_by_norm for max_norm={float(norms[0])} (a {type(norms[0]).__name__}) does not take "
            "max_norm as an argument: max_norm is a static argument, so every new value compiles a new program",
            "max_norm is only used in arithmetic, so it can stay a traced value: remove it from "
            "static_argnums/static_argnames",
        )
    for max_norm in norms[1:]:
        programs.assert_gives(compiled, x, max_norm, expected=reference.clip_by_norm(x, max_norm))


def grad_of_sum(clip):
    return jax.grad(lambda x: jnp.sum(clip(x, 1.0)))


def gradients_at(clip):
    """``clip_by_norm`` as data: the gradient of sum(clip(x, 1.0)) at ``x``, and under jax.vmap over ``batch``."""

    def gradients(x, batch):
        grad = grad_of_sum(clip)
        return np.asarray(grad(jnp.asarray(x))), np.asarray(jax.vmap(grad)(jnp.asarray(batch)))

    return gradients


@values_decided
def test_clip_by_norm_gradient_is_finite_at_zero(student):
    check = "the gradient of sum(clip_by_norm(x, 1.0)) is finite at x = 0, alone and under jax.vmap"
    batch = np.asarray([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [0.1, 0.2, 0.0], [0.0, 0.0, 0.0]], np.float32)
    at_zero, batched = structure.transformed_once(student.clip_by_norm, "gradients of the sum", gradients_at)(
        np.zeros(3, np.float32), batch
    )
    at_zero, batched = np.asarray(at_zero), np.asarray(batched)
    if not np.isfinite(at_zero).all():
        raise CheckFailure(check, f"the gradient at x = 0 is {at_zero}, not finite", DOUBLE_WHERE)
    bad = [i for i in range(len(batch)) if not np.isfinite(batched[i]).all()]
    if bad:
        raise CheckFailure(
            check,
            f"under jax.vmap over a batch with zero rows, the gradient of row {bad[0]} "
            f"(x = {np.asarray(batch[bad[0]]).tolist()}) is {batched[bad[0]]}",
            "under vmap a lax.cond with a batched predicate computes both branches; " + DOUBLE_WHERE,
        )


def gradient_and_slope_of_sum(clip):
    """``clip_by_norm`` as data: jax.grad of sum(clip(x, 1.0)) at ``x``, and its slope by central differences."""
    return lambda x: slopes.gradient_and_slope(lambda v: jnp.sum(clip(v, 1.0)), x)


@values_decided
@settings(max_examples=8)
@given(x=float32_arrays(((3,),), min_value=-3.0, max_value=3.0))
def test_clip_by_norm_gradient_is_the_slope_of_the_function(student, x):
    assume(abs(float(np.linalg.norm(x)) - 1.0) > 0.05)  # central differences across the kink at |x| = 1 are no slope
    gradient, slope = structure.transformed_once(student.clip_by_norm, "gradient and slope", gradient_and_slope_of_sum)(
        np.asarray(x, np.float32)
    )
    slopes.assert_gradient_matches_the_slope(gradient, slope, what="the gradient of sum(clip_by_norm(x, 1.0))")


@values_decided
def test_clip_by_norm_is_pure(student):
    x = np.linspace(-2.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
    purity.assert_pure_by_values(student.clip_by_norm, x, 1.0)


@pytest.mark.decided("source", "module_state")
def test_clip_by_norm_keeps_no_module_state(student):
    x = np.linspace(-2.0, 2.0, 6, dtype=np.float32).reshape(2, 3)
    purity.assert_module_state_unchanged(student, purity.cold(student.clip_by_norm), x, 1.0)


# newton_sqrt ----------------------------------------------------------------

NEWTON_SIZE = 4
NEWTON_STEPS = (1, 3, 8)
NEWTON_STATIC = (
    "n_steps decides the shape of history, so it must be static: "
    "functools.partial(jax.jit, static_argnames=('n_steps',)), on newton_sqrt itself at module level"
)


def positive_vectors(size=NEWTON_SIZE):
    exponents = st.lists(floats(-3.0, 3.0), min_size=size, max_size=size)
    return exponents.map(lambda e: (10.0 ** np.asarray(e)).astype(np.float32))


@correctness
@settings(max_examples=10)
@given(a=positive_vectors(), n_steps=st.sampled_from(NEWTON_STEPS))
@example(a=np.array([2.0], np.float32), n_steps=1)  # k = 1 and one step: a squeeze without an axis shows
def test_newton_sqrt_matches_reference(student, reference, a, n_steps):
    check = "newton_sqrt(a, n_steps) returns (x_n, history) with history[i] = x_(i+1)"
    got = values.assert_returns_tuple(
        student.newton_sqrt(a, n_steps), ("x_n", "history"), function="newton_sqrt", check=check
    )
    values.assert_trees_close(got, reference.newton_sqrt(a, n_steps), name="(x_n, history)", check=check)


@program
def test_newton_sqrt_is_jitted_with_static_n_steps(student, reference):
    """The student's own jax.jit function exports with its own static arguments for n_steps=5 (a traced n_steps
    cannot give history its shape), and that one program does not take n_steps (it is baked in: static) but does
    take a, and gives the reference's values for new values of a: one program serves every call with n_steps=5."""
    a = np.linspace(1.0, 2.0, 5, dtype=np.float32)  # a shape no other check uses
    check = "newton_sqrt is jitted with n_steps static"
    compiled, _ = own_program(
        student.newton_sqrt,
        a,
        5,
        name="newton_sqrt",
        reference_fn=reference.newton_sqrt,
        check=check,
        advice=NEWTON_STATIC,
    )
    if compiled.keeps(1) or not compiled.keeps(0):
        raise CheckFailure(
            check,
            "the program of newton_sqrt for n_steps=5 "
            + ("takes n_steps as an argument (n_steps is traced)" if compiled.keeps(1) else "does not take a"),
            NEWTON_STATIC,
        )
    for i in range(3):
        programs.assert_gives(
            compiled, a + np.float32(i + 1), 5, expected=reference.newton_sqrt(a + np.float32(i + 1), 5)
        )


@program
def test_newton_sqrt_program_does_not_grow_with_n_steps(student, reference):
    a = np.linspace(1.0, 2.0, NEWTON_SIZE, dtype=np.float32)
    compiled = {}
    for n in (3, 30):
        expected = reference.newton_sqrt(a, n)
        compiled[n] = programs.program_of(
            student.newton_sqrt,
            a,
            n,
            static_argnums=(1,),
            result_like=expected,
            name="newton_sqrt",
            check="newton_sqrt compiles to the same program whatever the size of n_steps",
        )
        programs.assert_gives(compiled[n], a, expected=expected)
    programs.assert_program_size_constant(
        compiled,
        "n_steps",
        name="newton_sqrt",
        advice="a Python for loop under jit is unrolled: n_steps copies of the step in the program, compiled "
        "for every n_steps. jax.lax.scan (or jax.lax.fori_loop writing into an array) keeps one copy of the step",
    )


@pytest.mark.decided("source", "module_state")
def test_newton_sqrt_writes_no_module_state_and_leaks_no_tracer(student):
    a = np.linspace(1.0, 2.0, NEWTON_SIZE, dtype=np.float32)
    fn = purity.cold(student.newton_sqrt)
    purity.assert_module_state_unchanged(student, fn, a, 4)
    purity.assert_no_leaked_tracers(purity.cold(fn), a, 6, module=student)


@values_decided
def test_newton_sqrt_converges_in_20_steps(student):
    a = np.logspace(-3, 3, 13).astype(np.float32)
    x_n, _ = student.newton_sqrt(a, 20)
    values.assert_trees_close(
        x_n,
        np.sqrt(a.astype(np.float64)).astype(np.float32),
        rtol=1e-6,
        atol=0,
        name="x_n",
        check="newton_sqrt(a, 20) is within 1e-6 (relative) of sqrt(a) for a in [1e-3, 1e3]",
        source="np.sqrt(a)",
    )


# standardize_logged ---------------------------------------------------------

LOG_LINE = re.compile(r"^mean=(\S+) std=(\S+)$")
PRINT_ADVICE = (
    "under jax.jit a Python print runs only while tracing (once, showing tracers); "
    'jax.debug.print("mean={m} std={s}", m=mean, s=std) is part of the compiled program and prints on every call'
)


def logged_inputs(n=6, calls=3, seed=0):
    rng = np.random.RandomState(seed)
    return [(rng.normal(size=n) * (i + 1) + 2.0 * (i + 1)).astype(np.float32) for i in range(calls)]


LOGGED_SHAPES = ((2,), (6,), (7,))  # n >= 2: the smallest, and a prime


@correctness
@settings(max_examples=8)
@given(x=float32_arrays(LOGGED_SHAPES, min_value=-5.0, max_value=5.0).filter(lambda x: np.ptp(x) > 0.1))
def test_standardize_logged_matches_reference(student, reference, x):
    with output.captured_stdout():
        values.assert_matches_reference(student.standardize_logged, reference.standardize_logged, x)


def test_standardize_logged_is_jitted(student):
    tracing.assert_is_jitted(student.standardize_logged, "standardize_logged")


def printed_lines(fn, x):
    with output.captured_stdout() as out:
        jax.block_until_ready(fn(x))
    return out.lines


def lines_printed_by(standardize_logged):
    """``standardize_logged`` called on :func:`logged_inputs` ``(n, seed)`` after its jit cache was cleared (the first
    call traces), as data: the lines each call printed."""

    def lines(n, seed):
        fn = purity.cold(standardize_logged)  # whatever ran before in this process: the next call traces
        return [printed_lines(fn, x) for x in logged_inputs(n=n, seed=seed)]

    return lines


def printed_by(student, n, seed):
    """The lines each call of the student's function printed on ``logged_inputs(n, seed)``: recorded as data, so
    a check reading them is decided on the trusted side (its own inputs, the printed text judged there)."""
    printed = structure.transformed_once(student.standardize_logged, "lines printed", lines_printed_by)(n, seed)
    if not (
        isinstance(printed, list) and all(isinstance(c, list) and all(isinstance(t, str) for t in c) for c in printed)
    ):
        raise CheckFailure(
            "standardize_logged's printed lines are recorded",
            "what standardize_logged printed could not be recorded as text",
            PRINT_ADVICE,
        )
    return printed


@values_decided
def test_standardize_logged_prints_one_line_per_call(student):
    """Every call counts, the first (tracing) one of each shape included: a print that fires while tracing shows
    (decided from the printed lines, recorded as values)."""
    for n in (5, 2):
        for i, lines in enumerate(printed_by(student, n, 2 + n)):
            if len(lines) != 1:
                which = "the first call (the one that traces)" if i == 0 else f"warm call {i} of 2"
                raise CheckFailure(
                    "standardize_logged prints exactly one line on every call, the first included",
                    f"with x of {n} entries, {which} printed {len(lines)} lines" + (f": {lines[:3]}" if lines else ""),
                    PRINT_ADVICE
                    if i or not lines
                    else "a Python print (or a second jax.debug.print) runs while tracing, so the first call shows an "
                    "extra line: print only with one jax.debug.print, and remove debugging prints",
                )


@values_decided
def test_standardize_logged_prints_the_mean_and_std(student):
    """Decided from the printed lines (recorded as values) against the mean and std of the check's own inputs."""
    check = "standardize_logged prints `mean=<mean> std=<std>` with the mean and the population std of x"
    for i, (x, lines) in enumerate(zip(logged_inputs(seed=4), printed_by(student, 6, 4))):
        if len(lines) != 1:
            which = "the first call (the one that traces)" if i == 0 else "a warm call"
            raise CheckFailure(check, f"{which} printed {len(lines)} lines instead of one", PRINT_ADVICE)
        found = LOG_LINE.match(lines[0].strip())
        try:
            numbers = (float(found.group(1)), float(found.group(2))) if found else None
        except ValueError:
            numbers = None
        if numbers is None:
            raise CheckFailure(
                check,
                f"the printed line {lines[0]!r} is not `mean=<number> std=<number>`",
                'print with jax.debug.print("mean={m} std={s}", m=mean, s=std): exactly this text, two numbers',
            )
        expected = (float(np.mean(x, dtype=np.float64)), float(np.std(x, dtype=np.float64)))
        for label, got, want in zip(("mean", "std"), numbers, expected):
            if not np.isclose(got, want, rtol=1e-5, atol=1e-6):
                raise CheckFailure(
                    check,
                    f"for x = {x.tolist()} the printed {label} is {got!r}, expected {want:.7g}",
                    "std is the population standard deviation, jnp.std(x) (ddof=0)" if label == "std" else "",
                )


@pytest.mark.decided("source", "jitted_without_retraces")  # its print is a host callback: no program to export
def test_standardize_logged_does_not_retrace(student):
    inputs = logged_inputs(calls=8, seed=5)
    with output.captured_stdout():
        tracing.assert_no_retrace(student.standardize_logged, lambda i: (inputs[i],), name="standardize_logged")
