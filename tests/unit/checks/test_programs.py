"""checks.programs: a program crosses as bytes and is rebuilt with the check's own shapes; what is not a program the
course could have made (junk, over the cap, a host callback, a custom call) is refused; the inspections say what
the program holds (its largest array, its operations, which arguments it takes)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder.checks import programs
from autograder.core.failures import CheckFailure

X = np.array([-1.0, 2.0, -3.0], np.float32)


def replace_negatives(x, value):
    return jnp.where(x < 0, value, x)


def payload_of(fn, *args) -> np.ndarray:
    return programs.pack(jax.export.export(jax.jit(fn))(*args))


def rebuilt(payload) -> programs.Program:
    return programs.Program(payload, (X, 0.5), {}, X, name="replace_negatives", check="the check")


def test_a_program_runs_with_the_checks_own_shapes_and_gives_its_values():
    compiled = programs.assert_compiles_to_the_reference(replace_negatives, X, 0.5, expected=replace_negatives(X, 0.5))
    np.testing.assert_array_equal(compiled(-X, 2.0), replace_negatives(-X, 2.0))
    assert compiled.keeps(0) and compiled.keeps(1)
    assert compiled.largest_value() == (3, "float32[3]")


def test_a_function_that_cannot_be_traced_fails_with_the_explanation():
    def boolean_indexing(x, value):
        return x.at[x < 0].set(value)

    with pytest.raises(CheckFailure, match="cannot be compiled with jax.jit: it uses boolean indexing"):
        programs.program_of(boolean_indexing, X, 0.5, result_like=X)


def test_only_a_jitted_function_has_a_program_of_its_own():
    with pytest.raises(CheckFailure, match="is not a jax.jit function"):
        programs.program_of(replace_negatives, X, 0.5, as_is=True, result_like=X)
    assert programs.program_of(jax.jit(replace_negatives), X, 0.5, as_is=True, result_like=X).keeps(1)


def test_a_static_argument_is_not_one_the_program_takes():
    static = jax.jit(replace_negatives, static_argnames="value")
    assert not programs.program_of(static, X, 0.5, as_is=True, result_like=X).keeps(1)


def test_a_python_loop_grows_the_program_and_a_jacobian_is_its_largest_value():
    def loop(x, value):
        for _ in range(int(value)):
            x = x * 2.0
        return x

    sizes = {n: programs.program_of(loop, X, n, static_argnums=(1,), result_like=X).operations() for n in (2, 5)}
    assert sizes[2] < sizes[5]
    jacobian = programs.program_of(lambda x: jax.jacfwd(jnp.sin)(x) @ x, np.ones(64, np.float32), result_like=X[:1])
    assert jacobian.largest_value() == (64 * 64, "float32[64,64]")


@pytest.mark.parametrize(
    "payload, why",
    [
        (np.frombuffer(b"junk" * 8, np.uint8), "header is malformed"),
        (np.zeros(programs.MAX_PROGRAM_BYTES + 1, np.uint8), "over the"),
        ("a string", "not a program"),
    ],
)
def test_what_is_not_a_program_is_refused(payload, why):
    with pytest.raises(CheckFailure, match=why):
        rebuilt(payload)


def test_a_custom_call_or_a_host_callback_is_refused():
    det = payload_of(lambda x, v: jnp.where(x < 0, v, x) + 0 * jnp.linalg.det(jnp.eye(4) * v), X, np.float32(0.5))
    with pytest.raises(CheckFailure, match="custom calls lapack"):
        rebuilt(det)

    def on_the_host(x, v):
        return jax.pure_callback(lambda a, b: np.where(a < 0, b, a), jax.ShapeDtypeStruct(x.shape, x.dtype), x, v)

    honest = payload_of(replace_negatives, X, np.float32(0.5)).tobytes()
    size = int.from_bytes(honest[8:12], "big")
    text = jax.jit(on_the_host).lower(X, np.float32(0.5)).as_text().encode()
    with pytest.raises(CheckFailure, match="custom calls|callback"):
        rebuilt(np.frombuffer(honest[: 12 + size] + text, np.uint8))


@pytest.fixture
def exports(monkeypatch) -> list[tuple]:
    """Every ``jax.export.export`` call made (a program lowered and serialized again)."""
    made: list[tuple] = []
    real = jax.export.export

    def counting(fn, *a, **k):
        exporting = real(fn, *a, **k)

        def export(*args, **kwargs):
            made.append(args)
            return exporting(*args, **kwargs)

        return export

    monkeypatch.setattr(jax.export, "export", counting)
    return made


def test_a_check_exports_a_function_once_per_signature_jit_traces_it_for(exports):
    """jit traces a function once per signature, so the same signature lowers to the same program: a later example
    with other values of the same shapes gets the same bytes without exporting again; another shape, dtype, weak
    type or value of a static argument is exported again."""

    def negatives(x, value):
        return jnp.where(x < 0, value, x)

    def bytes_of(*args, **kw):
        return programs.program_of(negatives, *args, result_like=args[0], **kw)

    first = bytes_of(X, 0.5)
    again = bytes_of(-X, 2.0)  # other values, the same signature (a Python float is traced, weak float32)
    assert len(exports) == 1 and first.text == again.text
    np.testing.assert_array_equal(again(-X, 2.0), negatives(-X, 2.0))
    bytes_of(np.ones(5, np.float32), 0.5)  # another shape
    bytes_of(X, np.float32(0.5))  # not weak
    bytes_of(X.astype(np.float16), 0.5)  # another dtype
    assert len(exports) == 4
    bytes_of(X, 1.5, static_argnums=(1,))
    bytes_of(X, 2.5, static_argnums=(1,))  # a static argument's value is part of the program
    bytes_of(X, 2.5, static_argnums=(1,))
    assert len(exports) == 6


def test_a_students_own_jit_is_exported_again_for_every_python_scalar_it_may_keep_static(exports):
    own = jax.jit(replace_negatives, static_argnames="value")
    for value in (0.5, 1.5, 1.5):
        program = programs.program_of(own, X, value=value, as_is=True, result_like=X)
        assert not program.keeps(1)
        np.testing.assert_array_equal(program(X, value=value), replace_negatives(X, value))
    assert len(exports) == 2


def test_a_program_is_rebuilt_once_per_bytes_and_refused_every_time(monkeypatch):
    from autograder.checks import lowered

    built: list[str] = []
    real = lowered.exported_from

    def counting(**fields):
        built.append(fields["fun_name"])
        return real(**fields)

    monkeypatch.setattr(lowered, "exported_from", counting)
    payload = payload_of(lambda x, v: jnp.where(x < 0, v, x) * 3.0, X, 0.5)
    first, again = rebuilt(payload), rebuilt(payload.copy())
    assert len(built) == 1 and first.text == again.text
    np.testing.assert_array_equal(again(-X, 0.25), jnp.where(-X < 0, 0.25, -X) * 3.0)
    programs.Program(payload, (np.ones(3, np.float32), 0.5), {}, X, name="other", check="the check")
    assert len(built) == 2  # another name: rebuilt for its own messages
    det = payload_of(lambda x, v: jnp.where(x < 0, v, x) + 0 * jnp.linalg.det(jnp.eye(4) * v), X, np.float32(0.5))
    for _ in range(2):
        with pytest.raises(CheckFailure, match="custom calls lapack"):
            rebuilt(det)


def test_a_programs_bytes_do_not_depend_on_the_folder_it_was_traced_in(tmp_path):
    """The grading processes lower without source locations (``child_env``): the same function traced in two
    sandboxes' folders has the same bytes, so the trusted side's answer to it can be kept (preflight.confirmations)."""
    from autograder.grading.isolation.processes import child_env

    def traced_in(folder: str):
        code = compile("import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2\n", f"{folder}/m.py", "exec")
        scope: dict = {}
        exec(code, scope)
        return payload_of(lambda x: scope["f"](x), X).tobytes()

    limit = getattr(jax.config, "jax_traceback_in_locations_limit")  # noqa: B009 - not in its type
    try:
        jax.config.update("jax_traceback_in_locations_limit", int(child_env()["JAX_TRACEBACK_IN_LOCATIONS_LIMIT"]))
        assert traced_in(str(tmp_path / "a")) == traced_in(str(tmp_path / "b"))
        jax.config.update("jax_traceback_in_locations_limit", 10)  # JAX's default: the file names are in them
        assert traced_in(str(tmp_path / "a")) != traced_in(str(tmp_path / "b"))
    finally:
        jax.config.update("jax_traceback_in_locations_limit", limit)
