"""Checks for module 11, ``parallel``: run ``pytest exercises/test_parallel.py``.

Every check is named after the function it judges; its points and hint come
from ``course.toml``. The checks run with 8 CPU devices. A parallel step is
judged against the single-device step on the whole batch (the reference's
results on the same inputs); where the results live (how many devices,
replicated or split) and whether the devices' gradients are combined with an
all-reduce are judged from the program the function compiles to (a ``pmap``
function's through ``jax.jit``): the grader runs it on inputs it places on its
own devices and reads the shardings of what that run returns and the
collectives its compiler puts in. The mesh and
the placed inputs the sharded step gets are made here, as the contract spells
them, so no check needs the reference next to the student's code. Steps run in
a loop that feeds their outputs back, as training does, and once warm they
must not trace again, not even for a new learning rate.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from autograder.checks import loops, programs, purity, retraces, shardings, structure, values
from autograder.checks.strategies import integers
from autograder.core.failures import CheckFailure
from autograder.runtime.devices import COURSE_CPU_DEVICES, wrong_device_count_advice

correctness = pytest.mark.correctness
decided_by_values = pytest.mark.decided("values")
# Decided on the trusted side from the program the function compiles to: it runs the program on inputs it places
# on its own devices (against the reference) and reads where the results of its run live.
program = pytest.mark.decided("program")
# Retracing, decided from the program (one program, the learning rate traced, serves every call of the loop: run on
# inputs the check places) and the source (no jax.jit or jax.pmap made per call, no cache cleared:
# autograder.core.retrace_sources); the count of traces is observed first, in the student's process.
one_program_per_loop = pytest.mark.decided("program", "retraces_in_a_loop")

X_DIM, Y_DIM = 3, 2
ROWS_PER_DEVICE = 2
LEARNING_RATES = (0.05, 0.3)
DEVICE_COUNTS = (COURSE_CPU_DEVICES, COURSE_CPU_DEVICES // 2)  # never only the number of devices: no hard-coded 8


@pytest.fixture(scope="module", autouse=True)
def devices():
    """Every check here needs the course's CPU devices; without them, say why at once."""
    if jax.device_count() != COURSE_CPU_DEVICES:
        raise CheckFailure(
            f"the checks run with {COURSE_CPU_DEVICES} CPU devices", wrong_device_count_advice(jax.device_count())
        )
    return jax.devices()


def regression(seed, n_rows):
    """``(params, x, y)`` for the linear model, as float32 NumPy arrays."""
    rng = np.random.RandomState(seed)
    params = {
        "W": rng.normal(size=(X_DIM, Y_DIM)).astype(np.float32),
        "b": rng.normal(size=(Y_DIM,)).astype(np.float32),
    }
    x = rng.normal(size=(n_rows, X_DIM)).astype(np.float32)
    y = rng.normal(size=(n_rows, Y_DIM)).astype(np.float32)
    return params, x, y


def replicate(tree, n):
    """Every leaf with a leading device axis of n identical copies (what pmap's params look like)."""
    return jax.tree.map(lambda p: np.broadcast_to(np.asarray(p), (n,) + np.shape(p)).copy(), tree)


def split_rows(a, n):
    return np.asarray(a).reshape((n, -1) + np.shape(a)[1:])


def as_jax(tree, use_jax):
    return jax.tree.map(jnp.asarray, tree) if use_jax else tree


# shard_batch ----------------------------------------------------------------


def batches(counts=(1, 4, 8), rows=(1, 3)):
    return st.fixed_dictionaries(
        {
            "n": st.sampled_from(counts),
            "rows": st.sampled_from(rows),
            "seed": integers(0, 2**16),
            "use_jax": st.booleans(),
        }
    )


def xy_batch(case):
    """``(x, labels)``: float32 (B, 3) and int32 (B,), with B = n * rows and every row different."""
    B = case["n"] * case["rows"]
    rng = np.random.RandomState(case["seed"])
    x = np.arange(B * X_DIM, dtype=np.float32).reshape(B, X_DIM) + rng.uniform(size=(B, X_DIM)).astype(np.float32)
    labels = np.arange(B, dtype=np.int32)
    return as_jax((x, labels), case["use_jax"])


def strided(tree, n):
    """Device i gets rows i, i + n, i + 2n, ...: what reshape((b, n, ...)) then swapping the axes gives."""
    return jax.tree.map(lambda a: np.swapaxes(np.asarray(a).reshape((-1, n) + np.shape(a)[1:]), 0, 1), tree)


@correctness
@settings(max_examples=8)
@given(case=batches())
def test_shard_batch_matches_reference(student, reference, case):
    batch, n = xy_batch(case), case["n"]
    check = f"shard_batch((x, labels), {n}) gives device i the rows i*b:(i+1)*b, with values and dtypes unchanged"
    got = student.shard_batch(batch, n)
    expected = reference.shard_batch(batch, n)
    try:
        values.assert_trees_close(got, expected, rtol=0, atol=0, check=check)
    except CheckFailure:
        try:
            values.assert_trees_close(got, strided(batch, n), rtol=0, atol=0, check=check)
        except CheckFailure:
            raise
        raise CheckFailure(
            check,
            f"device i got the rows i, i+{n}, i+{2 * n}, ... (every {n}th row), not a block of consecutive rows",
            "reshape (B, ...) directly to (n_devices, B // n_devices, ...): row-major order puts rows 0..b-1 on "
            "device 0. Reshaping to (b, n_devices, ...) and swapping the axes deals the rows out like cards.",
        ) from None


@decided_by_values
def test_shard_batch_works_on_any_pytree(student):
    """Leaf by leaf: a tree gives what each of its arrays gives alone (the arrays' values are the correctness check's)."""
    rng = np.random.RandomState(3)
    B, n = 8, 4
    trees = {
        "a dict": {"x": rng.normal(size=(B, X_DIM)).astype(np.float32), "y": np.arange(B, dtype=np.int32)},
        "nested lists and tuples": [
            (rng.normal(size=(B, 2, 2)).astype(np.float32),),
            jnp.arange(B, dtype=jnp.float32),
            {"mask": np.arange(B) % 2 == 0},
        ],
    }
    for what, tree in trees.items():
        check = f"shard_batch works on any pytree ({what}), leaf by leaf"
        values.assert_trees_close(
            student.shard_batch(tree, n),
            jax.tree.map(lambda leaf: student.shard_batch(leaf, n), tree),
            rtol=0,
            atol=0,
            check=check,
            source="its leaves sharded one by one",
        )


@decided_by_values
def test_shard_batch_leaves_inputs_unchanged(student):
    rng = np.random.RandomState(5)
    tree = [rng.normal(size=(8, X_DIM)).astype(np.float32), {"labels": np.arange(8, dtype=np.int32)}]
    """Judged from values: the arguments as they are after the call, and two calls' results."""
    purity.assert_arguments_unchanged_as_values(student.shard_batch, tree, 4, names=("tree", "n_devices"))
    purity.assert_deterministic_as_values(student.shard_batch, tree, 4)


# all_device_mean ------------------------------------------------------------


def slices(n, seed, tail=(5,)):
    return np.random.RandomState(seed).normal(size=(n,) + tail).astype(np.float32)


@correctness
@settings(max_examples=8)
@given(n=st.sampled_from(DEVICE_COUNTS), seed=integers(0, 2**16), use_jax=st.booleans())
def test_all_device_mean_matches_reference(student, reference, n, seed, use_jax):
    xs = as_jax(slices(n, seed), use_jax)
    values.assert_matches_reference(student.all_device_mean, reference.all_device_mean, xs)


ON_N_DEVICES = (
    "make all_device_mean a jax.pmap function (@functools.partial(jax.pmap, axis_name=...)) and average with "
    "jax.lax.pmean inside: pmap runs slice i on device i, and the result stays spread over those devices. "
    "A jnp.mean on one device, broadcast back to (n, ...), computes the right numbers on a single device."
)


@program
def test_all_device_mean_result_lives_on_n_devices(student, reference):
    """jax.export refuses a pmap function, not jax.jit of one: the program records its devices."""
    for n in DEVICE_COUNTS:
        xs = slices(n, n)
        check = f"all_device_mean of {n} slices returns a result spread over {n} devices"
        expected = reference.all_device_mean(xs)
        compiled = programs.program_of(student.all_device_mean, xs, result_like=expected, check=check)
        shardings.assert_runs_on_devices(compiled, n, what="result", check=check, advice=ON_N_DEVICES)
        got = programs.gives(compiled, shardings.placed(xs, n, split=True), expected=expected)
        shardings.assert_results_on_devices(got, n, name="result", check=check, advice=ON_N_DEVICES)


def fed_back(first_args, next_args):
    """The loop of ``loops.assert_no_retrace_when_fed_back`` (call 0 gets ``first_args``, call i ``next_args(result of
    call i - 1, i)``) as ``retraces.reference_loop``'s ``make_args`` and ``next_carry``."""
    return (lambda i, out: first_args if i == 0 else next_args(out, i)), (lambda i, carry, out: out)


def placed_split(n):
    """The program's arguments split over ``n`` devices, as a pmap function takes them."""
    return lambda args: shardings.placed(args, n, split=True)


@one_program_per_loop
def test_all_device_mean_does_not_retrace(student, reference):
    first, following = (slices(COURSE_CPU_DEVICES, 0),), lambda out, i: (out * 0.5 + i,)
    retraces.observed(
        student.all_device_mean,
        "fed_back",
        lambda real: loops.assert_no_retrace_when_fed_back(real, first, following, name="all_device_mean"),
    )
    retraces.assert_one_program(
        student.all_device_mean,
        *retraces.reference_loop(reference.all_device_mean, None, *fed_back(first, following), calls=4),
        name="all_device_mean",
        check="all_device_mean does not trace or compile again when fed its own results",
        run=placed_split(COURSE_CPU_DEVICES),
    )


# pmap_sgd_step --------------------------------------------------------------


def pmap_inputs(n, seed, use_jax=False):
    """Replicated params and the sharded batch for ``pmap_sgd_step``, and the whole batch for the reference."""
    params, x, y = regression(seed, n * ROWS_PER_DEVICE)
    inputs = (replicate(params, n), split_rows(x, n), split_rows(y, n))
    return as_jax(inputs, use_jax), (params, x, y)


def run_pmap_step(student, inputs, learning_rate):
    check = "pmap_sgd_step(params, xs, ys, learning_rate) returns (new_params, loss)"
    result = student.pmap_sgd_step(*purity.fresh_copy(inputs), learning_rate)
    return values.assert_returns_tuple(result, ("new_params", "loss"), function="pmap_sgd_step", check=check)


def diagnose_pmap_step(reference, got, whole, n, learning_rate):
    """What a wrong parallel step did instead, if it is one of the usual mistakes (else None)."""
    params, x, y = whole
    new_params, loss = got

    def same(a, b):
        try:
            values.assert_trees_close(a, b, rtol=1e-5, atol=1e-6)
            return True
        except CheckFailure:
            return False

    too_large = reference.sharded_sgd_step(params, x, y, learning_rate * n)[0]
    if same(new_params, replicate(too_large, n)):
        return (
            f"the step is {n} times too large: the gradients of the {n} devices were added (jax.lax.psum), not averaged",
            "each device's gradient is already a mean over its own rows; average them with jax.lax.pmean",
        )
    own = [
        reference.sharded_sgd_step(params, x_i, y_i, learning_rate)
        for x_i, y_i in zip(split_rows(x, n), split_rows(y, n))
    ]
    own_params = jax.tree.map(lambda *leaves: np.stack(leaves), *[o[0] for o in own])
    if same(new_params, own_params):
        return (
            "every device took its own step with the gradient of its own slice: the devices' params are no longer equal",
            "average the gradients across devices with jax.lax.pmean(grads, axis_name) before the update",
        )
    if same(new_params, replicate(reference.sharded_sgd_step(params, x, y, learning_rate)[0], n)):
        own_loss = np.array([float(o[1]) for o in own], np.float32)
        if same(loss, own_loss):
            return (
                "the params are right, but every device returned the loss of its own slice",
                "average the loss across devices too: jax.lax.pmean(loss, axis_name)",
            )
    return None


@correctness
@settings(max_examples=4)
@given(
    n=st.sampled_from(DEVICE_COUNTS),
    seed=integers(0, 2**16),
    learning_rate=st.sampled_from(LEARNING_RATES),
    use_jax=st.booleans(),
)
def test_pmap_sgd_step_equals_the_single_device_step(student, reference, n, seed, learning_rate, use_jax):
    inputs, whole = pmap_inputs(n, seed, use_jax)
    params, x, y = whole
    check = (
        f"on every one of {n} devices, pmap_sgd_step equals one SGD step (and the loss) on the whole batch of "
        f"{len(x)} rows on one device"
    )
    got = run_pmap_step(student, inputs, learning_rate)
    expected = reference.pmap_sgd_step(*purity.fresh_copy(inputs), learning_rate)  # the single-device step, n times
    try:
        values.assert_trees_close(got, expected, rtol=1e-5, atol=1e-6, name="(new_params, loss)", check=check)
    except CheckFailure as failure:
        diagnosis = diagnose_pmap_step(reference, got, whole, n, learning_rate)
        if diagnosis is None:
            raise
        raise CheckFailure(check, *diagnosis) from failure


@program
def test_pmap_sgd_step_outputs_are_spread_over_the_devices(student, reference):
    """Decided from the program of jax.jit of the pmap function (the learning rate static in that jit only, so a
    static_broadcasted_argnums fails the retrace check, not this one), run on inputs the check places."""
    advice = "make pmap_sgd_step a jax.pmap function: every device computes its own copy of the results"
    for n in DEVICE_COUNTS:
        inputs, _ = pmap_inputs(n, 1)
        check = f"pmap_sgd_step on {n} devices returns params and loss spread over {n} devices"
        expected = reference.pmap_sgd_step(*purity.fresh_copy(inputs), 0.1)
        compiled = programs.program_of(
            student.pmap_sgd_step, *inputs, 0.1, static_argnums=(3,), result_like=expected, check=check
        )
        shardings.assert_runs_on_devices(compiled, n, what="(new_params, loss)", check=check, advice=advice)
        got = programs.gives(compiled, *shardings.placed(inputs, n, split=True), expected=expected)
        shardings.assert_results_on_devices(got, n, name="(new_params, loss)", check=check, advice=advice)


def pmap_loop(student, reference, new_learning_rate):
    n = COURSE_CPU_DEVICES
    first, _ = pmap_inputs(n, 2)

    def next_args(out, i):
        (_, xs, ys), _ = pmap_inputs(n, 10 + i)
        return (out[0], xs, ys, 0.1 * (i + 1) if new_learning_rate else 0.1)

    label = "new_learning_rate" if new_learning_rate else "fed_back"
    retraces.observed(
        student.pmap_sgd_step,
        label,
        lambda real: loops.assert_no_retrace_when_fed_back(real, (*first, 0.1), next_args, name="pmap_sgd_step"),
    )
    retraces.assert_one_program(
        student.pmap_sgd_step,
        *retraces.reference_loop(reference.pmap_sgd_step, None, *fed_back((*first, 0.1), next_args), calls=4),
        name="pmap_sgd_step",
        check="pmap_sgd_step does not trace or compile again in a loop of steps"
        + (" with a new learning rate each step" if new_learning_rate else ""),
        run=lambda args: (
            *shardings.placed(args[:3], n, split=True),
            shardings.placed(np.float32(args[3]), n, split=False),
        ),
    )


@one_program_per_loop
def test_pmap_sgd_step_does_not_retrace(student, reference):
    """A loop of steps on new batches, each step's params fed to the next."""
    pmap_loop(student, reference, new_learning_rate=False)


@one_program_per_loop
def test_pmap_sgd_step_new_learning_rate_does_not_retrace(student, reference):
    """learning_rate is broadcast with in_axes None and traced: a schedule must not compile every step."""
    pmap_loop(student, reference, new_learning_rate=True)


# distribute -----------------------------------------------------------------

BATCH_ROWS = COURSE_CPU_DEVICES * ROWS_PER_DEVICE


@pytest.fixture(scope="module")
def mesh():
    """The module's given ``make_data_mesh()``, as the contract spells it (Auto axes)."""
    return jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(jax.sharding.AxisType.Auto,))


# distribute is given the mesh of every device and a mesh of half of them: one that builds its own mesh of
# every device (or hard-codes 8) places the arrays on devices the mesh it was given does not hold.
MESHES = ("every-device", "half-the-devices")


@pytest.fixture(scope="module")
def half_mesh():
    """A 1-D mesh with the axis 'batch' over the first half of the devices."""
    n = max(1, jax.device_count() // 2)
    return jax.make_mesh((n,), ("batch",), devices=jax.devices()[:n], axis_types=(jax.sharding.AxisType.Auto,))


def mesh_named(which, mesh, half_mesh):
    return mesh if which == "every-device" else half_mesh


def distribute_inputs(seed, use_jax=False):
    params, x, y = regression(seed, BATCH_ROWS)
    labels = np.arange(BATCH_ROWS, dtype=np.int32)
    return as_jax(params, use_jax), as_jax((x, y, labels), use_jax)


def run_distribute(student, params, batch, mesh):
    check = "distribute(params, batch, mesh) returns (params, batch)"
    result = student.distribute(params, batch, mesh)
    return values.assert_returns_tuple(result, ("params", "batch"), function="distribute", check=check)


@correctness
@settings(max_examples=4)
@given(seed=integers(0, 2**16), use_jax=st.booleans())
def test_distribute_keeps_values_and_inputs(student, mesh, seed, use_jax):
    params, batch = distribute_inputs(seed, use_jax)
    expected = purity.fresh_copy((params, batch))
    got = purity.assert_arguments_unchanged(student.distribute, params, batch, mesh)
    values.assert_trees_close(
        got,
        expected,
        rtol=0,
        atol=0,
        name="(params, batch)",
        source="the inputs",
        check="distribute returns the params and the batch with their values, shapes and dtypes unchanged",
    )


def where_it_lives(leaf):
    """Where a leaf of distribute's result lives, as values: its kind and shape, and for every shard the device's id
    and the rows (of axis 0) it holds."""
    if not isinstance(leaf, jax.Array):
        return {"kind": type(leaf).__name__, "shape": list(np.shape(leaf)), "shards": [], "spec": ""}
    rows = leaf.shape[0] if leaf.ndim else 1
    shards = []
    for shard in leaf.addressable_shards:
        index = shard.index[0] if leaf.ndim else slice(None)
        start, stop, _ = index.indices(rows)
        shards.append([int(shard.device.id), int(start), int(stop)])
    spec = str(getattr(leaf.sharding, "spec", type(leaf.sharding).__name__))  # for the message only
    return {"kind": "jax.Array", "shape": list(leaf.shape), "shards": sorted(shards), "spec": spec}


def placements(distribute):
    """``distribute(params, batch, mesh)``: where each leaf of the params and of the batch it returned lives (recorded
    as values: the trusted side judges the placements from them), or what it returned instead."""

    def placed(params, batch, mesh):
        result = distribute(params, batch, mesh)
        if not (isinstance(result, tuple) and len(result) == 2):
            return {"returned": values.describe(result)[:120]}
        return [jax.tree.map(where_it_lives, part) for part in result]

    return placed


def placed_by(student, params, batch, mesh):
    found = structure.transformed_once(student.distribute, "placements", placements)(params, batch, mesh)
    if isinstance(found, dict) or not isinstance(found, (list, tuple)) or len(found) != 2:
        shown = found.get("returned", "something that is not data") if isinstance(found, dict) else "no data"
        raise CheckFailure(
            "distribute(params, batch, mesh) returns (params, batch)",
            f"distribute returned {shown}",
            "return the pair (params, batch), each put on the mesh's devices",
        )
    return found


def placed_leaves(tree, name):
    """(where, placement) of every leaf of a tree of :func:`where_it_lives` records."""
    is_record = lambda x: isinstance(x, dict) and "shards" in x  # noqa: E731
    found = jax.tree_util.tree_leaves_with_path(tree, is_leaf=is_record)
    return [(name + jax.tree_util.keystr(path), leaf) for path, leaf in found if is_record(leaf)]


def assert_placed_on(placed, mesh, *, where, check, advice):
    """A JAX array whose shards live on exactly the devices of ``mesh``."""
    if placed["kind"] != "jax.Array":
        raise CheckFailure(check, f"{where} is a {placed['kind']}, not a JAX array on the devices", advice)
    devices = {device for device, _, _ in placed["shards"]}
    if len(devices) != mesh.size:
        raise CheckFailure(check, f"{where} lives on {len(devices)} device(s), expected {mesh.size}", advice)
    if devices != {int(d.id) for d in mesh.devices.flat}:
        raise CheckFailure(check, f"{where} lives on devices the mesh does not hold", advice)


@decided_by_values
@pytest.mark.parametrize("which", MESHES)
def test_distribute_replicates_params_on_every_device(student, mesh, half_mesh, which):
    """Judged from where every leaf lives, recorded as values."""
    mesh = mesh_named(which, mesh, half_mesh)
    params, batch = distribute_inputs(0)
    got_params, _ = placed_by(student, params, batch, mesh)
    check = f"distribute copies every param leaf whole to all {mesh.size} devices of the mesh"
    advice = (
        "jax.device_put(params, NamedSharding(mesh, P())): an empty PartitionSpec splits no axis, so every "
        "device holds the whole array. jax.device_put without a sharding puts it on one device only."
    )
    for where, placed in placed_leaves(got_params, "params"):
        assert_placed_on(placed, mesh, where=where, check=check, advice=advice)
        rows = placed["shape"][0] if placed["shape"] else 1
        pieces = sorted({(start, stop) for _, start, stop in placed["shards"]})
        if pieces != [(0, rows)]:
            raise CheckFailure(
                check,
                f"{where} is spread over the devices in pieces (rows {pieces}), not copied whole to each",
                advice,
            )


@decided_by_values
@pytest.mark.parametrize("which", MESHES)
def test_distribute_splits_the_batch_rows_over_the_mesh(student, mesh, half_mesh, which):
    """Judged from where every leaf lives, recorded as values: device i of the mesh holds rows i*b:(i+1)*b."""
    mesh = mesh_named(which, mesh, half_mesh)
    params, batch = distribute_inputs(1)
    _, got_batch = placed_by(student, params, batch, mesh)
    rows = BATCH_ROWS // mesh.size
    check = f"distribute splits every batch leaf along axis 0 over the mesh axis 'batch': {rows} rows on each device"
    advice = (
        "jax.device_put(batch, NamedSharding(mesh, P('batch'))) splits axis 0 of every leaf over the mesh axis "
        "named 'batch'; P() would copy the whole batch to every device"
    )
    wanted = sorted([int(d.id), i * rows, (i + 1) * rows] for i, d in enumerate(mesh.devices.flat))
    for where, placed in placed_leaves(got_batch, "batch"):
        assert_placed_on(placed, mesh, where=where, check=check, advice=advice)
        if [list(shard) for shard in placed["shards"]] != wanted:
            held = sorted({stop - start for _, start, stop in placed["shards"]})
            shown = "the whole batch" if held == [BATCH_ROWS] else f"{held} rows"
            raise CheckFailure(
                check,
                f"{where} is sharded as {placed['spec']}: each device holds {shown}, expected rows "
                f"i*{rows}:(i+1)*{rows} on device i of the mesh",
                advice,
            )


# sharded_sgd_step -----------------------------------------------------------


def step_program(student, reference, placed, learning_rate, check, *, own_jit):
    """The program of ``sharded_sgd_step`` for the placed inputs, and the reference's result: with ``own_jit`` the
    student's own jax.jit function's (only a jitted function has one); else the check's jax.jit of it, with the
    learning rate a constant of the program (the retrace check judges whether it is traced)."""
    expected = reference.sharded_sgd_step(*placed, learning_rate)
    compiled = programs.program_of(
        student.sharded_sgd_step,
        *placed,
        learning_rate,
        as_is=own_jit,
        static_argnums=() if own_jit else (3,),
        result_like=expected,
        name="sharded_sgd_step",
        check=check,
        advice="decorate it with @jax.jit, or write `sharded_sgd_step = jax.jit(...)` at module level: jax.jit is "
        "what partitions the step over the inputs' shardings",
    )
    return compiled, expected


@program
def test_sharded_sgd_step_is_jitted(student, reference, mesh):
    placed = sharded_inputs(mesh, 5)
    check = "sharded_sgd_step is compiled with jax.jit"
    compiled, expected = step_program(student, reference, placed, 0.1, check, own_jit=True)
    programs.assert_gives(compiled, *placed, 0.1, expected=expected, atol=1e-6)


def sharded_inputs(mesh, seed):
    """``(params, x, y)`` placed as the contract places them (params replicated, rows split over the mesh)."""
    params, x, y = regression(seed, BATCH_ROWS)
    placed_params = jax.device_put(params, NamedSharding(mesh, P()))
    placed_x, placed_y = jax.device_put((x, y), NamedSharding(mesh, P("batch")))
    return placed_params, placed_x, placed_y


def run_sharded_step(student, args, learning_rate):
    check = "sharded_sgd_step(params, x, y, learning_rate) returns (new_params, loss)"
    result = student.sharded_sgd_step(*args, learning_rate)
    return values.assert_returns_tuple(result, ("new_params", "loss"), function="sharded_sgd_step", check=check)


@correctness
@settings(max_examples=5)
@given(seed=integers(0, 2**16), learning_rate=st.sampled_from(LEARNING_RATES))
def test_sharded_sgd_step_equals_the_single_device_step(student, reference, mesh, seed, learning_rate):
    placed = sharded_inputs(mesh, seed)
    got = run_sharded_step(student, placed, learning_rate)
    values.assert_trees_close(
        got,
        reference.sharded_sgd_step(*placed, learning_rate),
        rtol=1e-5,
        atol=1e-6,
        name="(new_params, loss)",
        check=f"sharded_sgd_step on a batch split over {mesh.size} devices equals one SGD step on one device",
    )


@program
def test_sharded_sgd_step_results_are_replicated_on_all_devices(student, reference, mesh):
    """Where the results of the grader's own run of the program live, on the inputs it placed."""
    placed = sharded_inputs(mesh, 1)
    check = f"sharded_sgd_step's new params and loss are copied whole to all {mesh.size} devices"
    compiled, expected = step_program(student, reference, placed, 0.1, check, own_jit=False)
    got = programs.gives(compiled, *placed, expected=expected, atol=1e-6)
    shardings.assert_results_replicated(
        got,
        mesh.size,
        name="(new_params, loss)",
        check=check,
        advice="write the plain single-device step and let jax.jit partition it: the gradient of replicated params "
        "is summed over the devices, so the results are replicated. Do not move data to one device.",
    )


@program
def test_sharded_sgd_step_compiles_to_an_all_reduce(student, reference, mesh):
    """The collectives the grader's own compiler puts into the program for the inputs it placed."""
    placed = sharded_inputs(mesh, 2)
    check = (
        "sharded_sgd_step, compiled for a batch split over the mesh, combines the devices' gradients with an all-reduce"
    )
    compiled, expected = step_program(student, reference, placed, 0.1, check, own_jit=False)
    programs.assert_gives(compiled, *placed, expected=expected, atol=1e-6)
    shardings.assert_compiles_to_collective(
        compiled,
        *placed,
        collective="all-reduce",
        check=check,
        problem="the compiled program has no all-reduce: the devices never sum their partial gradients",
        advice="each device should work on its own rows and the compiler should add the cross-device sum. Gathering "
        "the whole batch onto every device (a replicating sharding constraint, a device_put inside) makes every "
        "device redo all the work instead.",
    )


@one_program_per_loop
def test_sharded_sgd_step_new_learning_rate_does_not_retrace(student, reference, mesh):
    first = sharded_inputs(mesh, 3)

    def next_args(out, i):
        _, x, y = sharded_inputs(mesh, 20 + i)
        return (out[0], x, y, 0.1 * (i + 1))

    retraces.observed(
        student.sharded_sgd_step,
        "new_learning_rate",
        lambda real: loops.assert_no_retrace_when_fed_back(real, (*first, 0.1), next_args, name="sharded_sgd_step"),
    )
    retraces.assert_one_program(
        student.sharded_sgd_step,
        *retraces.reference_loop(reference.sharded_sgd_step, None, *fed_back((*first, 0.1), next_args), calls=4),
        name="sharded_sgd_step",
        check="sharded_sgd_step does not trace or compile again in a loop of steps with a new learning rate each step",
    )


@decided_by_values
def test_sharded_sgd_step_is_pure(student, mesh):
    placed = sharded_inputs(mesh, 4)
    purity.assert_pure_by_values(student.sharded_sgd_step, *placed, 0.1)


@pytest.mark.decided("source", "module_state")
def test_sharded_sgd_step_keeps_no_module_state_and_leaks_no_tracer(student, mesh):
    placed = sharded_inputs(mesh, 4)
    purity.assert_module_state_unchanged(student, purity.cold(student.sharded_sgd_step), *placed, 0.1)
    purity.assert_no_leaked_tracers(purity.cold(student.sharded_sgd_step), *placed, 0.1, module=student)
