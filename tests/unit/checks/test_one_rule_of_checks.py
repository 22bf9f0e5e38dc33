""" "One rule" claims of the check modules, made true and kept true: one retrace loop with one message builder,
one jaxpr walker, one ``jax.monitoring`` listener (registered on first use, not at import), and the TrainState
helpers of the check files in ``checks/scenario.py``. Each finder reads the source with ``ast``; the behaviour
(the same messages) is pinned by the galleries (``test_check_loops.py``, ``test_check_tracing.py``, ...)."""

from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT

RETRACE_CHECKS = {
    "tracing": ("assert_no_retrace",),
    "loops": ("assert_no_retrace_in_loop", "assert_no_retrace_when_fed_back", "assert_chained_steps_do_not_retrace"),
}


def functions(path: Path) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.FunctionDef)}


def called(node: ast.AST) -> set[str]:
    return {
        c.func.id if isinstance(c.func, ast.Name) else c.func.attr
        for c in ast.walk(node)
        if isinstance(c, ast.Call) and isinstance(c.func, (ast.Name, ast.Attribute))
    }


def where_called(package: Path, name: str) -> list[str]:
    """``file:function`` of every call of ``name`` in the package (the innermost function holding it; ``<module>``
    for a call at import)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and name in (
                getattr(node.func, "id", None),
                getattr(node.func, "attr", None),
            ):
                holder = parents.get(node)
                while holder is not None and not isinstance(holder, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    holder = parents.get(holder)
                found.append(f"{path.relative_to(package)}:{holder.name if holder else '<module>'}")
    return sorted(set(found))


def retrace_loops(package: Path) -> list[str]:
    """Where a counted call runs: every function that enters a ``TraceCounter``."""
    return where_called(package / "checks", "TraceCounter")


def test_one_retrace_loop_and_the_checks_are_presets_of_it():
    assert retrace_loops(ROOT / "autograder") == ["tracing.py:count_retraces"]
    for module, names in RETRACE_CHECKS.items():
        defined = functions(ROOT / "autograder" / "checks" / f"{module}.py")
        for name in names:
            calls = called(defined[name])
            assert "count_retraces" in calls, name
            assert calls & {"retrace_failure", "same_shapes_failure"}, f"{name} builds its own message"


def test_one_message_builder_says_what_jax_explains():
    sources = [p.read_text(encoding="utf-8") for p in (ROOT / "autograder" / "checks").glob("*.py")]
    assert sum(s.count("JAX explains the cache miss") for s in sources) == 1
    assert sum(s.count("with explain_cache_misses()") for s in sources) == 1  # in retrace_failure only
    assert sum(s.count("every retrace costs a full compilation. Common causes: jax.jit(...)") for s in sources) == 1


def jaxpr_walkers(package: Path) -> list[str]:
    """Every function that reads a jaxpr's equations (``<jaxpr>.eqns``)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for fn in functions(path).values():
            own = [n for n in ast.walk(fn) if isinstance(n, ast.Attribute) and n.attr == "eqns"]
            nested = {
                n for sub in ast.walk(fn) if isinstance(sub, ast.FunctionDef) and sub is not fn for n in ast.walk(sub)
            }
            if [n for n in own if n not in nested]:
                found.append(f"{path.relative_to(package)}:{fn.name}")
    return found


def test_one_jaxpr_walker():
    assert jaxpr_walkers(ROOT / "autograder") == ["checks/jaxprs.py:walk"]


def monitoring_listeners(package: Path) -> list[str]:
    return where_called(package, "register_event_duration_secs_listener")


def test_one_monitoring_listener_registered_in_one_place():
    """Registered on first use, and shared: ``tests/system/test_monitoring_listener.py`` runs it."""
    assert monitoring_listeners(ROOT / "autograder") == ["runtime/monitoring.py:subscribe"]


# The check files of the shared TrainState scenario (checkpointing builds a state of its own: Adam, from model.init).
SCENARIO_FILES = ("test_training.py", "test_batchnorm.py", "test_dropout_rngs.py")


def copied_train_state_helpers(exercises: Path) -> list[str]:
    """Lines of the scenario's check files that build or judge a TrainState themselves instead of asking
    ``checks.scenario``."""
    patterns = (
        'drawn_key("a given state"',
        'drawn_key("create_train_state"',
        "train_state.TrainState",
        'assert_returns_tuple(result, ("new_state"',
        "assert_returns_tuple(\n",
    )
    return [
        f"{path.name}:{number}"
        for path in (exercises / name for name in SCENARIO_FILES)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(p in line for p in patterns) and "def " not in line
    ]


def test_the_train_state_helpers_live_in_the_scenario():
    assert copied_train_state_helpers(ROOT / "exercises") == []
    scenario = functions(ROOT / "autograder" / "checks" / "scenario.py")
    assert {"given_state", "created_state", "assert_is_train_state", "run_step"} <= set(scenario)
