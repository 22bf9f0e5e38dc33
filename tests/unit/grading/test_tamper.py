"""Tamper detection reports every kind of change to the grader's callables by name, and nothing else.

Unit cases of :mod:`autograder.grading.untrusted.tamper` on a watched module of their own, one per way a
submission can change a function, a class or its members; the grading tests (`test_grade_command.py`)
show the same on real submissions.
"""

import gc
import sys
import types

import pytest

from autograder.grading.untrusted import tamper

PROBE = "autograder._tamper_probe"  # a watched name (the kit's own package)


def make_probe() -> types.ModuleType:
    module = types.ModuleType(PROBE)
    exec(
        "def helper(x):\n    return x\n"
        "class Checker:\n"
        "    def method(self):\n        return 1\n"
        "    @property\n    def value(self):\n        return 2\n"
        "    @staticmethod\n    def static():\n        return 3\n"
        "    @classmethod\n    def build(cls):\n        return cls()\n"
        "counter = 0\n"
        "Alias = Checker\n",
        vars(module),
    )
    for value in vars(module).values():
        if isinstance(value, type):
            value.__module__ = PROBE
    return module


@pytest.fixture
def probe():
    module = make_probe()
    sys.modules[PROBE] = module
    try:
        yield module
    finally:
        sys.modules.pop(PROBE, None)


def both(member: str) -> list[str]:
    """A member of ``Checker``, which the module binds under two names: reported under both."""
    return [f"Alias.{member}", f"Checker.{member}"]


def replacement_code():
    def other(*args, **kwargs):
        return None

    return other.__code__


CHANGES = {
    "a function rebound": (lambda m: setattr(m, "helper", lambda x: x), ["helper"]),
    "a function's code rewritten": (lambda m: setattr(m.helper, "__code__", replacement_code()), ["helper"]),
    "a function removed": (lambda m: delattr(m, "helper"), ["helper"]),
    "a class replaced": (
        lambda m: setattr(m, "Checker", type("Checker", (), {})),
        ["Checker", "Checker.build", "Checker.method", "Checker.static", "Checker.value"],
    ),
    "a class's alias replaced": (
        lambda m: setattr(m, "Alias", type("Checker", (), {})),
        ["Alias", "Alias.build", "Alias.method", "Alias.static", "Alias.value"],
    ),
    "a method rebound": (lambda m: setattr(m.Checker, "method", lambda self: 1), both("method")),
    "a method's code rewritten": (
        lambda m: setattr(m.Checker.method, "__code__", replacement_code()),
        both("method"),
    ),
    "a property's getter rewritten": (
        lambda m: setattr(vars(m.Checker)["value"].fget, "__code__", replacement_code()),
        both("value"),
    ),
    "a staticmethod's code rewritten": (
        lambda m: setattr(vars(m.Checker)["static"].__func__, "__code__", replacement_code()),
        both("static"),
    ),
    "a classmethod replaced": (lambda m: setattr(m.Checker, "build", classmethod(lambda cls: None)), both("build")),
    "the module replaced by one without the function": (
        lambda m: sys.modules.__setitem__(PROBE, types.ModuleType(PROBE)),
        [
            *("Alias", "Alias.build", "Alias.method", "Alias.static", "Alias.value"),
            *("Checker", "Checker.build", "Checker.method", "Checker.static", "Checker.value", "helper"),
        ],
    ),
}


class Impostor:
    """Equal to everything, and carrying the replaced function's own code: only identity tells it apart."""

    def __init__(self, original):
        self.__code__ = original.__code__

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

    def __call__(self, *args, **kwargs):
        return None


CHANGES.update(
    {
        "a function replaced by an impostor equal to it, with its code": (
            lambda m: setattr(m, "helper", Impostor(m.helper)),
            ["helper"],
        ),
        "a property replaced by one with the same getter": (
            lambda m: setattr(m.Checker, "value", property(vars(m.Checker)["value"].fget)),
            both("value"),
        ),
    }
)


@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
def test_every_kind_of_change_is_reported_by_name(probe, change):
    before = tamper.snapshot()
    assert tamper.changed(before) == []
    apply, names = CHANGES[change]
    apply(probe)
    assert tamper.changed(before) == [f"{PROBE}.{name}" for name in names]


def test_data_new_names_and_pytests_own_rebinding_are_not_changes(probe):
    before = tamper.snapshot()
    probe.counter += 1  # data changes legitimately while checks run
    probe.Checker.added = lambda self: None  # new names are not compared
    util = sys.modules.get("_pytest.assertion.util")
    if util is not None:  # pytest rebinds these around every test
        util._reprcompare, saved = (lambda *a: None), util._reprcompare
    try:
        assert tamper.changed(before) == []
    finally:
        if util is not None:
            util._reprcompare = saved


class Reporter:
    def __init__(self):
        self.fd, self.nonce, self.sent, self.count = 3, "n", [], 0

    def emit(self, **event):
        self.sent.append(event)


@pytest.mark.parametrize(
    "forge",
    [
        lambda r: setattr(r, "emit", lambda **event: None),  # an emit of its own, shadowing the class's
        lambda r: setattr(r, "nonce", "another"),
        lambda r: setattr(r, "sent", []),
        lambda r: delattr(r, "fd"),
        lambda r: setattr(r, "__class__", type("Reporter", (Reporter,), {})),
    ],
    ids=["emit shadowed", "nonce rebound", "list replaced", "attribute removed", "class swapped"],
)
def test_the_reporters_state_is_a_tripwire(forge):
    """A submission that finds the reporter through gc and rebinds any of its attributes trips it; the
    attributes the reporter rebinds itself (``mutable``) do not."""
    reporter = Reporter()
    before = tamper.state_of(reporter)
    reporter.count += 1
    reporter.sent.append({"event": "begin"})  # its own list, growing: not a change of state
    assert tamper.state_changed(reporter, before, frozenset({"count"})) == []
    forge(reporter)
    assert tamper.state_changed(reporter, before, frozenset({"count"}))


# Issue 42: the libraries the checks call are watched too, and pytest's plugin manager.


LIBRARY_FUNCTIONS = ["jax.jit", "jax.make_jaxpr", "jax.vmap", "jax.debug_key_reuse", "flax.linen.Dense", "optax.sgd"]


def test_a_library_function_a_check_calls_replaced_at_import_is_found():
    import importlib

    for extra in ("orbax.checkpoint", "jaxlib"):
        importlib.import_module(extra)
    before = tamper.snapshot()
    for name in LIBRARY_FUNCTIONS:
        module_name, attr = name.rsplit(".", 1)
        module = importlib.import_module(module_name)
        saved = getattr(module, attr)
        setattr(module, attr, lambda *args, **kwargs: None)
        try:
            assert name in tamper.changed(before)
        finally:
            setattr(module, attr, saved)
    assert tamper.changed(before) == []


class HonestPlugin:
    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report):
        pass


class ForgingPlugin:
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        report.outcome = "passed"


@pytest.mark.parametrize(
    "register",
    [
        lambda pm: pm.register(ForgingPlugin()),
        lambda pm: pm.register(ForgingPlugin(), name="a-name-of-its-own"),
        lambda pm: pm.unregister(name="honest"),  # a plugin of the kit's taken off
        lambda pm: pm.hook.pytest_runtest_logreport._hookimpls.pop(),  # the hook's list edited in place
        lambda pm: pm.set_blocked("honest"),
    ],
    ids=["registered", "registered with a name", "unregistered", "hook list edited", "blocked"],
)
def test_a_plugin_registered_or_removed_by_any_route_is_found(register):
    import pluggy
    from _pytest.config import PytestPluginManager

    pm = PytestPluginManager()
    assert isinstance(pm, pluggy.PluginManager)
    pm.register(HonestPlugin(), name="honest")
    before = tamper.hooks_of(pm)
    assert tamper.hooks_changed(pm, before) == []
    register(pm)
    found = tamper.hooks_changed(pm, before)
    assert found and set(found) <= {"pytest plugins", "pytest hook pytest_runtest_logreport"}, found


@pytest.mark.parametrize("enabled", [True, False])
def test_the_snapshot_sets_off_no_collection_and_leaves_the_collector_as_it_was(enabled):
    """Tens of thousands of entries in every grading process: the garbage collector is paused while they are
    made (each pass of it would walk the young heap), and left as it was found."""
    runs = []

    def count(phase, info):
        if phase == "start":
            runs.append(info["generation"])

    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    gc.callbacks.append(count)
    try:
        before = tamper.snapshot()
        assert gc.isenabled() is enabled
    finally:
        gc.callbacks.remove(count)
        (gc.enable if was else gc.disable)()
    assert len(before) > 1000 and runs == []
