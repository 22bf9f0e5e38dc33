"""Under an instructor seed, the correctness checks call the reference on inputs a release never recorded.

A release records every concrete call of the reference in both profiles without a seed
(``autograder.release.record``): what a student may look answers up in. The course's correctness
checks are run again under ``--grading --grading-seed N`` with the same recording machinery, and the
two sets of calls are compared by the recording's digests: by value, arrays by bytes, shape and dtype,
keys by their key data (``plain_data.digest``), each call as a whole (function and arguments).

The keys, datasets, loader shuffles, given states and step counts of the scenario-built checks are
drawn from the seed (``scenario.drawn_seed``, ``drawn_key``, ``xor_loader``, ``saved_steps``), so
their calls are disjoint from the release's. Hypothesis-driven checks draw new inputs under a seed
too, but a few calls of theirs still repeat: their explicit ``@example`` cases and the simplest input
Hypothesis always tries first. ``HYPOTHESIS_REPEATS`` names those functions; the test fails on a repeat
of any other function, and on any repeat at all in the modules whose inputs come from fixtures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT

pytestmark = pytest.mark.timeout(1800)

SEED = 12345
# Functions whose correctness checks are Hypothesis-driven: their @example cases and Hypothesis's simplest
# input repeat under a seed (every other input they get is drawn anew). Not yet drawn from the seed.
HYPOTHESIS_REPEATS = {
    "at_updates": {"replace_negatives", "scatter_add", "set_diagonal", "clamp_at"},
    "autodiff": {"directional_derivative", "vjp_rows", "value_and_gradient", "hvp"},
    "data": {"numpy_collate", "XORDataset"},
    "jit_static": {"clip_by_norm", "newton_sqrt", "pad_to_multiple"},
    "parallel": {"all_device_mean", "sharded_sgd_step", "shard_batch", "pmap_sgd_step"},
    "prng": {"dropout|jit[2]", "init_mlp|jit[1]", "random_walk|jit[1]", "two_normals|jit[]"},
    "pytrees": {"mse", "global_norm", "sgd_update", "param_count"},
    "vmap_linear": {"per_example_grads", "linear", "batched_linear"},
}
# The modules whose correctness inputs are built from fixtures and constants: none may repeat.
FROM_FIXTURES = ("training", "batchnorm", "dropout_rngs", "checkpointing")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
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
        cwd=ROOT, env=_env(), check=True, capture_output=True,
    )
    subprocess.run(
        [sys.executable, "-m", "pytest", "exercises/", "--solutions", "--grading", "--grading-seed", str(SEED),
         "-m", "correctness", "--record-oracle", str(seeded), "-q", "-p", "no:randomly", "-p", "no:cacheprovider"],
        cwd=ROOT, env=_env(), check=True, capture_output=True,
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


def test_no_correctness_input_of_a_fixture_built_check_is_one_the_release_recorded(recorded):
    release, seeded = recorded
    found = repeats(release, seeded)
    assert not {m: f for m, f in found.items() if m in FROM_FIXTURES}, found


def test_only_hypothesis_examples_repeat_elsewhere(recorded):
    """Every other repeat is one of the named Hypothesis-driven functions (their examples and simplest input)."""
    release, seeded = recorded
    found = repeats(release, seeded)
    unexpected = {m: f - HYPOTHESIS_REPEATS.get(m, set()) for m, f in found.items()}
    assert not {m: f for m, f in unexpected.items() if f}, unexpected

