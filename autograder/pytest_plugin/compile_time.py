"""How long each check waited for JAX to trace and compile, from ``jax.monitoring`` events.

JAX's events come from the process's one listener (:mod:`autograder.runtime.monitoring`).
A student waiting seconds on a check should know it is JAX compiling (each new
function, shape or dtype compiles once), not their code looping. The plugin
measures every check with :class:`CompileClock` and lists, in one line each,
the checks that compiled for more than :data:`SLOW_COMPILE_SECONDS`.
"""

from __future__ import annotations

from autograder.runtime import monitoring

SLOW_COMPILE_SECONDS = 2.0

# JAX's own duration events for turning a Python function into an executable.
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


class CompileClock:
    """Adds up compile-event durations while it is running (``with CompileClock() as clock``)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __enter__(self) -> CompileClock:
        monitoring.subscribe(self._on_event)
        return self

    def __exit__(self, *exc: object) -> None:
        monitoring.unsubscribe(self._on_event)

    def _on_event(self, event: str, duration: float) -> None:
        if event in COMPILE_EVENTS:
            self.seconds += duration


def is_slow(seconds: float) -> bool:
    return seconds > SLOW_COMPILE_SECONDS


def slow_compile_lines(seconds_by_check: dict[str, float]) -> list[str]:
    """One line per check that compiled for longer than :data:`SLOW_COMPILE_SECONDS`."""
    return [
        f"{check}: waited {seconds:.1f} s for JAX to compile (once per new function, shape or dtype; not your code looping)"
        for check, seconds in seconds_by_check.items()
        if is_slow(seconds)
    ]
