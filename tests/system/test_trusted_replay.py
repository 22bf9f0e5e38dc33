"""The trusted side replays every check it can: it confirms a claimed pass only with the student's own answers.

- ``prng``'s checks jit the student's function: the student's process records the jitted function's answers
  with concrete arguments (``fn|jit[...]``) and the verifier replays them the same way;
- ``autodiff``'s take the check's own functions as arguments (looked up by their source);
- ``batchnorm``'s take and return ``TrainState``s of a course class, with an optimizer and an apply function
  (recorded as recipes, rebuilt around the verifier's own);
- ``data``'s ``XORDataset`` returns a dataset (recorded as its items); ``make_loader``'s check gets the
  function through a fixture built on the module under test (``loader_module``): it was confirmed by running
  the reference's own copy, and is now honestly unverifiable (a ``DataLoader`` is not data).

Before, these could not be written as plain data, and a claimed pass stood on the student's word.
"""

from __future__ import annotations

import copy
import itertools
import os
import signal
import time

import certificates
import pytest

from autograder.core.status import Status
from autograder.grading.wire import UNVERIFIABLE

MODULES = ("prng", "autodiff", "batchnorm", "data")


@pytest.fixture(scope="module")
def graded_reference(tmp_path_factory):
    """The reference graded for real (child and verifier), with what the verifier was given and said."""
    with certificates.graded_for_real(tmp_path_factory.mktemp("reference"), MODULES) as (grader, result, seen):
        assert all(seen["transcripts"][claim] for claim in replayable(seen))
        yield grader, result, seen


def test_the_references_answers_are_replayed_and_confirmed(graded_reference):
    _, result, seen = graded_reference
    assert sum(s.points for s in result.scores) == sum(s.max_points for s in result.scores)
    assert {claim.split("::")[0] for claim in seen["claims"]} == set(MODULES)
    outcomes = {claim: verdict.outcome for claim, verdict in seen["verdicts"].items()}
    # every claim is replayed and confirmed: make_loader's batches are recorded as data (issue 32: an
    # unverifiable pass no longer stands, and make_loader's stood unverified before)
    assert set(outcomes.values()) == {str(Status.PASSED)}, outcomes


def replayable(seen) -> list[str]:
    """The claims replayed from what the grading process recorded (a check decided from the source records nothing:
    ``tests/system/test_source_certificates.py``)."""
    return [claim for claim in seen["claims"] if seen["plan"][claim].decided != "source"]


def test_a_pass_claimed_without_answers_is_not_confirmed(graded_reference):
    grader, _, seen = graded_reference
    verdicts = grader.trusted.verify(replayable(seen), {claim: {} for claim in replayable(seen)})
    assert {v.outcome for v in verdicts.values()} == {str(Status.FAILED)}, verdicts


def test_a_pass_claimed_with_wrong_answers_is_not_confirmed(graded_reference):
    """Of a correctness check (a check decided from values of another kind gets a forgery of its own, below)."""
    grader, _, seen = graded_reference
    correctness = {c.id for c in grader.plan if c.correctness}
    claims = [claim for claim in replayable(seen) if claim in correctness]
    forged = {claim: copy.deepcopy(seen["transcripts"][claim]) for claim in claims}
    for calls in forged.values():  # every recorded float array gets 1 added to its first element
        for encoded in calls.values():
            _nudge(encoded)
    verdicts = grader.trusted.verify(claims, forged)
    assert UNVERIFIABLE not in {v.outcome for v in verdicts.values()}
    assert {v.outcome for v in verdicts.values()} == {str(Status.FAILED)}, verdicts


def _nudge(encoded) -> None:
    """Add 1 to the first element of the first non-empty float array of a recorded result; a recorded program
    (a uint8 array, ``checks.programs``) loses its second half."""
    import base64

    import numpy as np

    for packed in encoded.get("arrays", []):
        arr = np.frombuffer(base64.b64decode(packed["b"]), dtype=np.dtype(packed["dtype"])).copy()
        if arr.dtype.kind == "f" and arr.size:
            arr.flat[0] += 1.0
            packed["b"] = base64.b64encode(arr.tobytes()).decode("ascii")
            return
        if arr.dtype == np.uint8 and arr.ndim == 1 and arr.size > 64:
            half = arr[: arr.size // 2]
            packed["b"], packed["shape"] = base64.b64encode(half.tobytes()).decode("ascii"), [half.size]
            return


def test_one_trusted_process_confirms_student_after_student(graded_reference):
    """The run's verifier outlives a student (its compiled programs stay warm): a student it failed leaves
    nothing behind for the next, and one that died is replaced."""
    grader, _, seen = graded_reference
    honest = {claim: seen["transcripts"][claim] for claim in replayable(seen)}
    # every request here is asked of the verifier: an answer kept for the same request would be given instead
    # (preflight.confirmations, tested in test_class_sharing)
    grader.trusted.kept_confirmations = None
    [server] = grader.trusted.verifiers.started()
    grader.trusted.verify(replayable(seen), {claim: {} for claim in replayable(seen)})
    verdicts = grader.trusted.verify(replayable(seen), honest, seen["sources"])  # the retrace checks read it
    assert {v.outcome for v in verdicts.values()} == {str(Status.PASSED)}, verdicts
    assert grader.trusted.verifiers.started() == [server] and server.alive()

    os.kill(server.handle.pid, signal.SIGKILL)
    while server.alive():
        time.sleep(0.05)
    verdicts = grader.trusted.verify(replayable(seen), honest, seen["sources"])  # the retrace checks read it
    assert {v.outcome for v in verdicts.values()} == {str(Status.PASSED)}, verdicts
    [replaced] = grader.trusted.verifiers.started()
    assert replaced is not server and replaced.alive()


# Checks decided on the trusted side from values (issue 42, ``pytest.mark.decided("values")``): each is given the
# transcript of a grading process that claims the check passed while its function does what the check rules out
# (the helper that judged it patched, say): the values it recorded are a wrong function's, and the trusted side
# reads them as the check does. A +1 on a float (the test above) is no such forgery for a check of an order, a
# kind or a state: each check gets one that breaks its own property.


def _every_array(value, change):
    """``value`` with every NumPy/JAX float array ``a`` replaced by ``change(a)`` (keys and integers kept)."""
    import jax
    import numpy as np

    from autograder.checks.values import is_key

    def leaf(a):
        if isinstance(a, (np.ndarray, jax.Array)) and not is_key(a) and np.asarray(a).dtype.kind == "f":
            return change(a)
        return a

    return jax.tree_util.tree_map(leaf, value)


def _chunked(order, epoch):
    sizes = [len(batch) for batch in epoch]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [list(order[s : s + n]) for s, n in zip(starts, sizes)]


def _is_epoch(value):
    """The sample indices of one pass over a loader: a list of batches of Python ints."""
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(b, list) and all(type(x) is int for x in b) for b in value)
    )


_EPOCHS_SEEN = itertools.count()


def _in_turn_other_orders(epoch):
    """The epochs of a loader whose order changes on every call: in order, then in reverse, in turn."""
    order = _in_order(epoch)
    return order if next(_EPOCHS_SEEN) % 2 else _chunked([x for b in reversed(order) for x in reversed(b)], epoch)


def _in_order(epoch):
    return _chunked(range(sum(map(len, epoch))), epoch)


def _other_kind(key):
    import jax

    from autograder.checks.values import is_key

    return jax.random.key_data(key) if is_key(key) else jax.random.wrap_key_data(key)


def _second_call_differs(value):
    """A :func:`purity.called_twice` record whose second call gave another result (a hidden counter)."""
    if isinstance(value, tuple) and len(value) == 4 and isinstance(value[3], dict):
        first, second, left, reseeded = value
        return first, _every_array(second, lambda a: a + 1), left, reseeded
    return value


def _as_jax(value):
    import jax
    import jax.numpy as jnp
    import numpy as np

    return jax.tree_util.tree_map(lambda a: jnp.asarray(a) if isinstance(a, (np.ndarray, np.generic)) else a, value)


def _rngs_drawn(states):
    name = next(n for n in states if "NumPy" in n)
    kind, keys, pos, has_gauss, gauss = states[name]
    return {**states, name: (kind, keys, pos + 1, has_gauss, gauss)}


def _data_shifted(index, dataset):
    from autograder.recording.recorded import RecordedDataset

    shifted = {k: v for k, v in vars(dataset).items() if not k.startswith("_")}
    shifted["data"] = shifted["data"] + index
    return RecordedDataset(shifted, list(dataset), dataset._ref)


# test name (without parameters) -> (index of the recorded call, its value) -> the forged value
FORGERS = {
    "test_two_normals_returns_a_key_of_the_kind_passed_in": lambda i, v: (_other_kind(v[0]), *v[1:]),
    "test_dropout_rescales_kept_entries": lambda i, v: v * 2,
    "test_dropout_with_rate_zero_keeps_everything": lambda i, v: v + 1,
    "test_two_normals_randomness_comes_from_the_key": lambda i, v: _second_call_differs(v),
    "test_init_mlp_randomness_comes_from_the_key": lambda i, v: _second_call_differs(v),
    "test_dropout_randomness_comes_from_the_key": lambda i, v: _second_call_differs(v),
    "test_random_walk_randomness_comes_from_the_key": lambda i, v: _second_call_differs(v),
    "test_value_and_gradient_is_pure": lambda i, v: _second_call_differs(v),
    "test_directional_derivative_returns_only_the_tangent": lambda i, v: (v, v),
    "test_XORDataset_default_std_is_0_1": _data_shifted,
    "test_XORDataset_items_are_data_label_pairs": lambda i, v: (*v[:2], [(b, a) for a, b in v[2]], v[3]),
    "test_XORDataset_items_are_numpy": lambda i, v: (*v[:2], _as_jax(v[2]), v[3]),
    "test_XORDataset_uses_its_own_generator": lambda i, v: _rngs_drawn(v),
    "test_XORDataset_works_in_a_dataloader_with_workers": lambda i, v: v[:-1] if isinstance(v, list) else v,
    # a collate that takes the last sample off the batch it is given leaves a shorter list (the transform records
    # the arguments as the call left them, and nothing else: a 1-tuple holding the batch list)
    "test_numpy_collate_leaves_the_batch_unchanged": lambda i, v: (
        (v[0][:-1],) if isinstance(v, tuple) and len(v) == 1 and isinstance(v[0], list) and v[0] else v
    ),
    # the loader's batches (a list of batches, each a list) in another order; numpy_collate's own calls (made in
    # the grading process for the reference, which holds none there) are left as they are
    "test_numpy_collate_works_in_a_dataloader": lambda i, v: (
        v[::-1] if isinstance(v, list) and v and all(isinstance(b, list) for b in v) else v
    ),
    # (the transcripts of make_loader's checks hold other calls too: the forms' values are picked by their shape)
    "test_make_loader_honours_batch_size_shuffle_and_drop_last": lambda i, v: (
        [[0] * len(b) for b in v] if _is_epoch(v) else v
    ),
    "test_make_loader_keeps_the_last_short_batch_by_default": lambda i, v: (
        [[0] * len(b) for b in v] if _is_epoch(v) else v
    ),
    "test_make_loader_same_seed_same_order_whatever_the_global_rng": lambda i, v: (
        [v[0], _chunked([x for b in reversed(v[1]) for x in reversed(b)], v[1])]
        if isinstance(v, list) and len(v) == 2 and all(map(_is_epoch, v))
        else v
    ),
    "test_make_loader_order_depends_on_seed": lambda i, v: _in_order(v) if _is_epoch(v) else v,
    "test_make_loader_default_seed_is_0": lambda i, v: _in_turn_other_orders(v) if _is_epoch(v) else v,
    "test_make_loader_loaders_made_together_keep_their_own_order": lambda i, v: (
        (v[0], [e[::-1] for e in v[1]]) if isinstance(v, tuple) and len(v) == 2 else v
    ),
    "test_make_loader_leaves_global_rngs_untouched": lambda i, v: _rngs_drawn(v),
}


def test_a_values_decided_pass_claimed_with_a_wrong_functions_values_is_not_confirmed(graded_reference):
    from autograder.grading import transcript

    grader, _, seen = graded_reference
    mine = ("prng", "autodiff", "data")  # batchnorm's are another change's
    decided = {c.id for c in grader.plan if c.decided == "values" and not c.correctness and c.module in mine}
    claims = [claim for claim in replayable(seen) if claim in decided]
    names = {claim.split("::")[1].split("[")[0] for claim in claims}
    assert names == set(FORGERS), "every values-decided check of these modules is forged here"
    statics = transcript.statics()
    forged = {}
    for claim in claims:
        forge = FORGERS[claim.split("::")[1].split("[")[0]]
        forged[claim] = {
            key: transcript.encode(forge(i, transcript.decode(encoded, statics)), statics)
            for i, (key, encoded) in enumerate(seen["transcripts"][claim].items())
        }
    verdicts = grader.trusted.verify(claims, forged)
    assert {claim: v.outcome for claim, v in verdicts.items()} == dict.fromkeys(claims, str(Status.FAILED))
    honest = grader.trusted.verify(claims, {claim: seen["transcripts"][claim] for claim in claims}, seen["sources"])
    assert {v.outcome for v in honest.values()} == {str(Status.PASSED)}, honest
