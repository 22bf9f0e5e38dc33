"""One ``jax.monitoring`` listener for the process, registered on first use; whoever needs JAX's events subscribes.

JAX reports how long it spent tracing, lowering and compiling as duration events. The
retracing checks count traces and compilations (``checks.tracing.TraceCounter``), the pytest
plugin adds up compile time per check (``pytest_plugin.compile_time.CompileClock``): both
subscribe here for as long as they measure. Nothing is registered with JAX at import (and
JAX is not imported) until the first subscription.
"""

from __future__ import annotations

from collections.abc import Callable

from autograder.runtime import stores

Subscriber = Callable[[str, float], None]

# The subscribers measuring now (each removed when it stops; clearing stops them all).
_subscribers: list[Subscriber] = stores.register("runtime.monitoring.subscribers", [])
# Whether this module's listener is registered with JAX (once per process and copy of this module: a fact about
# JAX, not a store to clear, or the events would be heard twice).
_registered = False


def _on_event(event: str, duration_secs: float, **_: str | int) -> None:
    for subscriber in tuple(_subscribers):
        subscriber(event, duration_secs)


def subscribe(subscriber: Subscriber) -> None:
    """``subscriber(event, duration)`` for every JAX duration event from now until :func:`unsubscribe`."""
    global _registered
    if not _registered:
        import jax.monitoring

        jax.monitoring.register_event_duration_secs_listener(_on_event)
        _registered = True
    _subscribers.append(subscriber)


def unsubscribe(subscriber: Subscriber) -> None:
    """Stop calling ``subscriber`` (one subscription of it)."""
    _subscribers.remove(subscriber)
