"""Givens are never answers (issue 11, part 3): what a module's fixtures build with the reference, which
``grade`` records on its trusted side and ships to the grading processes of a module judged there only,
holds no answer to a question the checks judge.

One real recording of the course: the trusted side's plan (``verifier.answer``, which records the givens of
every module that has some), then every check of those modules run against the reference with each
reference call noted as asked by a fixture or by a check. For every such module:

- no call a check makes was also made by a fixture (the givens would hold its answer), and
- no array a given holds (two or more numbers, not all equal) equals an array of the answer to a check's call:
  a fixture's start state built from the key a correctness check judges, or a state on the path the
  checks judge, would be caught here.

The comparison is itself tested on a recording that leaks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import ROOT

pytestmark = pytest.mark.timeout(1200)

ARRAY_KINDS = ("np", "jax", "npscalar")

RECORD = r"""
import json, sys
from pathlib import Path

import pytest

from autograder.grading.wire import VerifierRequest, pytest_args
from autograder.grading.trusted.verifier import answer
from autograder.recording import givens, plain_data
from autograder.recording.recorded import RecordingFunction, RecordingOracle

course, out = Path(sys.argv[1]), Path(sys.argv[2])
modules = [p.stem.removeprefix("test_") for p in sorted((course / "exercises").glob("test_*.py"))]
plan = out / "plan.json"
assert answer(VerifierRequest("plan", course_root=str(course), modules=modules, out=str(plan), givens=str(out / "givens")))
with_givens = sorted({c["module"] for c in json.loads(plan.read_text())["plan"] if c.get("givens")})
RecordingOracle.reset()

asked_by_checks = {}
recording_call = RecordingFunction.__call__


def call(self, *args, **kwargs):
    if not givens.in_fixture_setup():
        try:
            key = plain_data.digest(self.name, args, kwargs, self.oracle.statics)
        except plain_data.Unencodable:  # traced: nothing concrete is asked
            key = None
        if key is not None:
            asked_by_checks.setdefault(self.oracle.module_name, []).append(key)
    return recording_call(self, *args, **kwargs)


RecordingFunction.__call__ = call


args = [str(course / "exercises" / f"test_{m}.py") for m in with_givens]
code = pytest.main(args + ["--solutions", "--record-oracle", str(out / "checks"), *pytest_args(str(course))], plugins=[givens.FixturesFromGivens()])
(out / "asked_by_checks.json").write_text(json.dumps({"modules": with_givens, "code": int(code), "asked": asked_by_checks}))
"""


def array_indices(tree) -> list[int]:
    """The indices of the arrays a recorded output refers to."""
    found = []

    def walk(t):
        if isinstance(t, list):
            if len(t) == 2 and t[0] in ARRAY_KINDS and type(t[1]) is int:
                found.append(t[1])
                return
            for x in t:
                walk(x)

    walk(tree)
    return found


def informative(a: np.ndarray) -> bool:
    """Two numbers or more, not all equal: a zero bias is in every fresh state, and tells nothing."""
    a = np.asarray(a)
    return a.size >= 2 and not (a == a.reshape(-1)[0]).all()


def fingerprint(a: np.ndarray) -> tuple:
    a = np.asarray(a)
    return a.dtype.str, a.shape, np.ascontiguousarray(a).tobytes()


# The checks' calls whose input is a checkpoint the reference wrote and the grading process is given.
READERS_OF_GIVEN_CHECKPOINTS = ("restore_checkpoint|from files", "restore_latest|from a run")


def numbers_of_output(recording, tree, checkpoints: bool = True) -> list[np.ndarray]:
    """The informative arrays of one recorded output; of a checkpoint recorded as files (``checks.files``), the
    arrays it holds (its bytes are compared by what they hold: two checkpoints of one model share their
    metadata files, which tell nothing)."""
    found = [recording.arrays[i] for i in array_indices(tree) if not is_file(recording.arrays[i])]
    for checkpoint in checkpoints_in(recording, tree) if checkpoints else ():
        found += checkpoint_values(checkpoint)
    return [a for a in found if informative(a)]


def numbers_of_recording(recording, checkpoints: bool = True) -> list[np.ndarray]:
    return [a for _, output in recording.calls.values() for a in numbers_of_output(recording, output, checkpoints)]


def is_file(a) -> bool:
    return np.asarray(a).dtype == np.uint8


def checkpoints_in(recording, tree) -> list[dict]:
    """The files snapshots (relative path -> bytes or None) in a recorded output that hold an Orbax checkpoint."""
    found = []

    def walk(t):
        if isinstance(t, list) and len(t) == 3 and t[0] == "dict":
            entries = t[2]
            if entries and all(k[0] == "py" and isinstance(k[1], str) for k, _ in entries):
                snapshot = {}
                for k, v in entries:
                    if v == ["py", None]:
                        snapshot[k[1]] = None
                    elif isinstance(v, list) and len(v) == 2 and v[0] == "np" and is_file(recording.arrays[v[1]]):
                        snapshot[k[1]] = recording.arrays[v[1]]
                if len(snapshot) == len(entries) and any(p.endswith("_METADATA") for p in snapshot):
                    found.append(snapshot)
                    return
        if isinstance(t, list):
            for x in t:
                walk(x)

    walk(tree)
    return found


def checkpoint_values(snapshot: dict) -> list[np.ndarray]:
    """The arrays every checkpoint in ``snapshot`` holds, read with Orbax (no target: plain arrays)."""
    import tempfile

    import jax
    import orbax.checkpoint as ocp

    from autograder.checks import files

    with tempfile.TemporaryDirectory() as tmp:
        root = files.materialise(snapshot, Path(tmp) / "c")
        found = []
        for metadata in sorted(root.rglob("_METADATA")):
            with ocp.StandardCheckpointer() as checkpointer:
                found += [np.asarray(leaf) for leaf in jax.tree.leaves(checkpointer.restore(metadata.parent))]
        return found


def leaks(given: dict, checks: dict, asked: dict[str, list[str]]) -> list[str]:
    """What the givens (module -> Recording) hold of the answers to the checks' calls (module -> Recording, with
    the digests each module's checks asked in ``asked``)."""
    found = []
    held = {fingerprint(a) for recording in given.values() for a in numbers_of_recording(recording)}
    # A reader of a given checkpoint is judged on what that checkpoint holds: that is its task, not a leak.
    held_apart_from_checkpoints = {
        fingerprint(a) for recording in given.values() for a in numbers_of_recording(recording, checkpoints=False)
    }
    for module, keys in asked.items():
        recording = checks.get(module)
        if recording is None:
            continue
        given_calls = given[module].calls if module in given else {}
        for key in dict.fromkeys(keys):
            if key in given_calls:
                found.append(f"{module}: a fixture made the call {given_calls[key][0]} that a check asks too")
            entry = recording.calls.get(key)
            if entry is None:
                continue
            compared = held_apart_from_checkpoints if entry[0] in READERS_OF_GIVEN_CHECKPOINTS else held
            if any(fingerprint(a) in compared for a in numbers_of_output(recording, entry[1])):
                found.append(f"{module}: the givens hold an array of the answer of {entry[0]}")
    return found


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    from autograder.grading.isolation.scratch import Snapshot
    from autograder.recording.recorded import Recording

    out = tmp_path_factory.mktemp("givens")
    course, _ = Snapshot.take(ROOT).materialize(out / "copy")  # as grade's trusted side has it
    done = subprocess.run(
        [sys.executable, "-c", RECORD, str(course), str(out)], capture_output=True, text=True, cwd=out
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((out / "asked_by_checks.json").read_text())
    assert result["code"] == 0, done.stdout[-3000:]

    def load(folder: Path) -> dict:
        return {p.stem: Recording.load(folder, p.stem) for p in folder.glob("*.json")}

    return result["modules"], load(out / "givens"), load(out / "checks"), result["asked"]


def test_the_givens_hold_no_answer_to_a_question_the_checks_ask(recorded):
    modules, given, checks, asked = recorded
    assert {"dropout_rngs", "batchnorm", "training", "checkpointing"} <= set(modules), modules
    assert given["dropout_rngs"].calls and asked["dropout_rngs"], "the recording saw the givens and the checks' calls"
    assert "data" in given  # the batches come from the data module's reference
    assert not leaks(given, checks, asked)


def test_the_comparison_finds_a_given_that_answers_a_check():
    """A fixture's start state built from the key a check judges create_train_state with (the dropout
    checks before the givens: start from PRNGKey(0), judged on jax.random.key(0)), and a call asked twice."""
    from autograder.recording.recorded import Recording

    params = np.linspace(-1, 1, 14, dtype=np.float32).reshape(2, 7)
    given = {"m": Recording("m", {"g": ["create", ["struct", ["np", 0]]]}, [params])}
    checks = {
        "m": Recording(
            "m", {"c": ["create", ["struct", ["jax", 0], ["py", 1]]], "g": ["create", ["np", 0]]}, [params.copy()]
        )
    }
    assert len(leaks(given, checks, {"m": ["c"]})) == 1
    assert len(leaks(given, checks, {"m": ["g"]})) == 2
    other = {"m": Recording("m", {"c": ["create", ["jax", 0]]}, [params + 1])}
    assert not leaks(given, other, {"m": ["c"]})
    zeros = {"m": Recording("m", {"g": ["create", ["np", 0]]}, [np.zeros(7, np.float32)])}
    asked_zeros = {"m": Recording("m", {"c": ["create", ["np", 0]]}, [np.zeros(7, np.float32)])}
    assert not leaks(zeros, asked_zeros, {"m": ["c"]})  # a zero bias is in every fresh state


def test_the_comparison_reads_checkpoints_given_as_files(tmp_path):
    """A given checkpoint of the state a save check is judged on leaks (its files differ, its values do not);
    a checkpoint of other values does not, nor do the metadata files every checkpoint of the model shares; a
    reader of the given checkpoint is judged on what it holds."""
    import orbax.checkpoint as ocp

    from autograder.checks import files
    from autograder.recording import plain_data
    from autograder.recording.recorded import Recording

    def checkpoint(values):
        path = tmp_path / f"c{len(list(tmp_path.iterdir()))}"
        with ocp.StandardCheckpointer() as checkpointer:
            checkpointer.save(path, {"w": values})
        return files.snapshot(path)

    def recording(calls):
        arrays, statics = [], plain_data.Statics(lambda module, qualname: None)
        return Recording(
            "m", {k: [name, plain_data.encode(v, arrays, statics)] for k, (name, v) in calls.items()}, arrays
        )

    w = np.linspace(-1, 1, 6, dtype=np.float32)
    given = {"m": recording({"g": ("save_checkpoint|files written", checkpoint(w))})}
    same = {"m": recording({"c": ("save_checkpoint|files written", checkpoint(w))})}
    other = {"m": recording({"c": ("save_checkpoint|files written", checkpoint(w + 1))})}
    read = {"m": recording({"c": ("restore_checkpoint|from files", {"w": w})})}
    assert len(leaks(given, same, {"m": ["c"]})) == 1
    assert not leaks(given, other, {"m": ["c"]})
    assert not leaks(given, read, {"m": ["c"]})


# -- the pieces -------------------------------------------------------------------------------------


def test_a_check_continues_along_the_students_path_in_the_given_structure():
    """The student's numbers in the given state's static structure (a state whose apply_fn or tx is not data
    still continues); a recorded oracle continues along the reference's path, which is all it knows."""
    from types import SimpleNamespace

    import jax.numpy as jnp
    import optax
    from flax.training import train_state

    from autograder.core.oracle import continue_from
    from autograder.recording.givens import GivensFirst

    def apply(variables, x):
        return x

    given = train_state.TrainState.create(apply_fn=apply, params={"w": jnp.zeros(2)}, tx=optax.sgd(0.1))
    got = given.replace(step=given.step + 1, params={"w": jnp.ones(2)}, apply_fn=lambda v, x: x)
    expected = given.replace(step=given.step + 1, params={"w": jnp.full(2, 0.5)})
    # the givens are a recorded oracle, which walks the reference's path: the combined oracle does not
    recorded_givens = SimpleNamespace(knows_only_its_own_path=True)
    for live in (SimpleNamespace(), GivensFirst("m", recorded_givens, SimpleNamespace())):
        following = continue_from(live, given, got, expected)
        assert following.apply_fn is apply and following.tx is given.tx
        assert float(following.params["w"][0]) == 1.0 and int(following.step) == 1
    assert continue_from(SimpleNamespace(knows_only_its_own_path=True), given, got, expected) is expected
    assert continue_from(SimpleNamespace(), given, (1, 2), expected) == (1, 2)  # not a state: the student's answer


def test_fixtures_are_answered_from_the_givens_and_checks_by_the_students_own_functions(tmp_path):
    from types import SimpleNamespace

    from autograder.recording.givens import GivensFirst, GivensMissing, setting_up_fixtures
    from autograder.recording.recorded import RecordedOracle, RecordingOracle, write_given_modules

    course = tmp_path / "course"
    (course / "exercises").mkdir(parents=True)
    (course / "exercises" / "m.py").write_text(
        "class Given:\n    size = 3\n\n\ndef double(x):\n    raise NotImplementedError\n", encoding="utf-8"
    )
    RecordingOracle.reset()
    live = SimpleNamespace(module_name="m", double=lambda x: np.asarray(x) * 2)
    RecordingOracle(live, tmp_path / "givens", {"double"}).double(np.arange(3.0))
    RecordingOracle.save_all()
    RecordingOracle.reset()
    write_given_modules(course, tmp_path / "givens")

    own = SimpleNamespace(double=lambda x: np.asarray(x) * 3)  # the student's own (wrong) double
    oracle = GivensFirst("m", RecordedOracle(tmp_path / "givens", "m"), own)
    with setting_up_fixtures():
        assert oracle.double(np.arange(3.0)).tolist() == [0.0, 2.0, 4.0]  # recorded on the trusted side
        with pytest.raises(GivensMissing, match="no answer of reference.double"):
            oracle.double(np.arange(4.0))
    assert oracle.double(np.arange(3.0)).tolist() == [0.0, 3.0, 6.0]  # in a check: the student's own
    assert oracle.Given.size == 3  # a class the course gives comes from the stub
    with pytest.raises(RuntimeError, match="fixtures only"):
        oracle.sibling("m").double(np.arange(3.0))
