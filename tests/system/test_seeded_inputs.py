"""Under an instructor seed, the correctness checks call the reference on inputs a release never recorded.

A release records every concrete call of the reference in both profiles without a seed
(``autograder.release.record``): what a student may look answers up in. The course's correctness
checks are run again under ``--grading --grading-seed N`` with the same recording machinery, and the
two sets of calls are compared by the recording's digests: by value, arrays by bytes, shape and dtype,
keys by their key data (``plain_data.digest``), each call as a whole (function and arguments).

The keys, datasets, loader shuffles, given states and step counts of the scenario-built checks are
drawn from the seed (``scenario.drawn_seed``, ``drawn_key``, ``xor_loader``, ``saved_steps``). The
Hypothesis-driven checks run no explicit ``@example`` under a seed (``profiles.use_seed``), and the
values of ``autograder.checks.strategies`` are moved by a seed-derived constant, so that the simplest
inputs Hypothesis always tries first (zeros, key 0, the simplest completions of its first prefixes)
are the seed's too. No call of any module may repeat one the release recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import find
from support import ROOT

from autograder.checks import scenario, strategies

pytestmark = pytest.mark.timeout(1800)

SEED = 12345


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI" and not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def calls(folder: Path) -> dict[str, dict[str, str]]:
    """``{module: {digest of a call's inputs: function}}`` of a recorded oracle."""
    return {
        index.stem: {digest: entry[0] for digest, entry in json.loads(index.read_text())["calls"].items()}
        for index in sorted(folder.glob("*.json"))
    }


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    base = tmp_path_factory.mktemp("seeded_inputs")
    release, seeded = base / "release", base / "seeded"
    subprocess.run(
        [sys.executable, "-m", "autograder.release.record", str(ROOT), str(release)],
        cwd=ROOT,
        env=_env(),
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "exercises/",
            "--solutions",
            "--grading",
            "--grading-seed",
            str(SEED),
            "-m",
            "correctness",
            "--record-oracle",
            str(seeded),
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        env=_env(),
        check=True,
        capture_output=True,
    )
    return calls(release), calls(seeded)


def repeats(release: dict, seeded: dict) -> dict[str, set[str]]:
    """``{module: functions}`` called by the seeded correctness checks on inputs the release recorded."""
    found = {}
    for module, seeded_calls in seeded.items():
        common = seeded_calls.keys() & release.get(module, {}).keys()
        if common:
            found[module] = {seeded_calls[d] for d in common}
    return found


def test_every_module_was_recorded_both_ways(recorded):
    release, seeded = recorded
    assert set(seeded) == set(release) and len(seeded) >= 12
    assert all(seeded[m] for m in seeded), [m for m in seeded if not seeded[m]]


def test_no_correctness_input_under_a_seed_is_one_the_release_recorded(recorded):
    """The whole course, fixture-built and Hypothesis-driven checks alike: the two sets of calls are disjoint."""
    release, seeded = recorded
    assert not repeats(release, seeded), {m: (len(seeded[m]), len(release[m])) for m in seeded}


# The strategies: the simplest value depends on the seed ---------------------------------------------------


def _fingerprint(value) -> object:
    """A comparable image of a drawn value: arrays by dtype, shape and bytes, keys by their key data."""
    import jax

    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_fingerprint(v) for v in value))
    if isinstance(value, dict):
        return tuple(sorted((k, _fingerprint(v)) for k, v in value.items()))
    if isinstance(value, jax.Array) and jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
        value = jax.random.key_data(value)
    if isinstance(value, (np.ndarray, np.generic, jax.Array)):
        array = np.asarray(value)
        return (str(array.dtype), array.shape, array.tobytes())
    return (type(value).__name__, value)


# Each builds a strategy when called (a check file builds its strategies when it is imported).
STRATEGIES = {
    "float32s": lambda: strategies.float32s(),
    "float32_arrays": lambda: strategies.float32_arrays(),
    "vectors_with_indices": lambda: strategies.vectors_with_indices(),
    "ordered_pairs": lambda: strategies.ordered_pairs(),
    "keys": lambda: strategies.keys(),
    "integers": lambda: strategies.integers(0, 2**16),
    "integers leaving their range": lambda: strategies.integers(-3, 3, leave_range=True),
    "floats": lambda: strategies.floats(-3.0, 3.0),
    "collate_batches": lambda: strategies.collate_batches(),
    "linear_problems": lambda: strategies.linear_problems(),
}


def _simplest(build, seed, monkeypatch):
    """The simplest value Hypothesis draws from the strategy built under ``seed`` (None: the published one)."""
    monkeypatch.setattr(scenario, "instructor_seed", lambda: seed)
    return _fingerprint(find(build(), lambda _: True))


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_the_simplest_value_of_a_strategy_is_the_seed_s(name, monkeypatch):
    """Hypothesis tries the simplest value first under any seed: moved by the seed, it is the seed's own."""
    published = _simplest(STRATEGIES[name], None, monkeypatch)
    seeded = [_simplest(STRATEGIES[name], seed, monkeypatch) for seed in (SEED, 1, 2**31 - 2)]
    assert all(s != published for s in seeded), (name, published, seeded)
    assert len({repr(s) for s in seeded}) == len(seeded), (name, seeded)
    assert seeded[0] == _simplest(STRATEGIES[name], SEED, monkeypatch)  # one seed, one input


def test_without_a_seed_a_strategy_is_the_published_one(monkeypatch):
    """No seed: the very strategy the release recorded answers for (``drawn_from_seed`` adds nothing)."""
    monkeypatch.setattr(scenario, "instructor_seed", lambda: None)
    base = strategies.st.integers(0, 5)
    assert strategies.drawn_from_seed(base, 0, 5, integer=True) is base
    assert strategies.drawn_constant(3, 2, 9) == 3


def test_moved_values_keep_their_range_type_and_float32_rules(monkeypatch):
    """Moved, a value stays in its range and dtype: float32 without subnormals, integers a permutation of the range."""
    monkeypatch.setattr(scenario, "instructor_seed", lambda: SEED)
    tiny = np.finfo(np.float32).tiny
    x = np.array([-10.0, -1e-3, 0.0, 2.5, 10.0], np.float32)
    out = find(strategies.drawn_from_seed(strategies.st.just(x), -10.0, 10.0, width=32), lambda _: True)
    assert out.dtype == np.float32 and out.shape == x.shape and ((-10 <= out) & (out <= 10)).all()
    assert not ((out != 0) & (np.abs(out) < tiny)).any() and not np.isin(out, x).any()
    scalar = find(
        strategies.drawn_from_seed(strategies.st.just(np.zeros((), np.float32)), -1.0, 1.0, width=32), lambda _: True
    )
    assert isinstance(scalar, np.ndarray) and scalar.shape == () and scalar != 0
    ints = find(
        strategies.drawn_from_seed(strategies.st.just(np.arange(7, dtype=np.int32)), 0, 6, integer=True), lambda _: True
    )
    assert ints.dtype == np.int32 and sorted(ints.tolist()) == list(range(7)) and ints.tolist() != list(range(7))
    assert strategies.drawn_constant(3, 2, 9) in set(range(2, 10)) - {3}
    away = find(strategies.integers(-3, 3, leave_range=True), lambda _: True)
    assert type(away) is int and not -3 <= away <= 3


# The profile: no explicit example, no reuse, under a seed ------------------------------------------------

PROBE = textwrap.dedent("""
    import json, sys
    from hypothesis import Phase, example, given, settings
    from autograder.pytest_plugin import profiles

    profiles.register_profiles()
    settings.load_profile(profiles.GRADING)
    if sys.argv[1] != "none":
        profiles.use_seed(int(sys.argv[1]))
    from autograder.checks import strategies  # strategies are built after the seed is read, as a check file's are
    seen = []

    @given(n=strategies.integers(0, 1000))
    @example(n=-7)
    def check(n):
        seen.append(n)

    check()
    current = settings.default
    print(json.dumps({"seen": seen, "phases": [p.name for p in current.phases], "database": repr(current.database),
                      "derandomize": current.derandomize}))
""")


def _probe(seed) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(seed)], cwd=ROOT, env=_env(), check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_seeded_run_draws_no_explicit_example_and_reuses_nothing():
    published, seeded, again, other = _probe("none"), _probe(SEED), _probe(SEED), _probe(1)
    assert published["seen"][:2] == [-7, 0] and "explicit" in published["phases"]  # students keep the examples
    assert -7 not in seeded["seen"] and 0 not in seeded["seen"]  # no example; the simplest value is moved
    assert "explicit" not in seeded["phases"] and "reuse" not in seeded["phases"] and "generate" in seeded["phases"]
    assert seeded["database"] == "None" and seeded["derandomize"] is False
    assert seeded["seen"] == again["seen"] and seeded["seen"] != other["seen"]  # one seed, one sequence
