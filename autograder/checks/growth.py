"""Work linear in the batch: the one judgement shared by the jaxpr's check (:mod:`~autograder.checks.structure`)
and the compiled program's (:mod:`~autograder.checks.programs`)."""

from __future__ import annotations

from autograder.core.failures import CheckFailure


def assert_growth_linear(
    found: dict[int, list[tuple[int, tuple[int, ...], str]]], *, name: str, values: str, contract: str
) -> None:
    """The one judgement of "work linear in the batch": ``found`` maps two batch sizes to the (elements, shape,
    kind) of every value computed for them (from a jaxpr or from a compiled program, named by ``values``); the
    largest value and all values together may grow at most linearly (with slack for constants)."""
    n_small, n_large = sorted(found)
    linear = n_large / n_small
    biggest = {n: max(v, default=(0, (), "")) for n, v in found.items()}
    total = {n: sum(size for size, _, _ in v) for n, v in found.items()}
    largest_growth = biggest[n_large][0] / max(biggest[n_small][0], 1)
    total_growth = total[n_large] / max(total[n_small], 1)
    if max(largest_growth, total_growth) > 1.5 * linear:
        _, shape, kind = biggest[n_large]
        raise CheckFailure(
            f"{name} does work proportional to the batch (one gradient per example)",
            f"the work of {name} grows quadratically with the batch: from a batch of {n_small} to {n_large} "
            f"({linear:g} times more examples) {values} grow {total_growth:.0f} times in total, and its largest "
            f"one is {shape} ({kind}), {largest_growth:.0f} times larger. A value of batch x batch entries is what "
            "a Jacobian of the vector of all B losses builds (jax.jacrev / jax.jacobian, or a vjp mapped over the "
            "rows of an identity matrix): each example's loss is differentiated against every other example, which "
            "is B times the work, almost all of it zeros",
            contract,
        )
