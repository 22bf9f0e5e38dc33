"""The trusted side's plan kept beside the proofs (autograder.grading.preflight.plans): read back whole, with its
givens, only for the very same setting and only as the grader wrote it; and what a grader imports before it forks
follows the modules it grades (autograder.runtime.preload.grading_set)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import ROOT

from autograder.grading import preflight
from autograder.grading.isolation.scratch import Snapshot
from autograder.grading.preflight.plans import KeptPlans
from autograder.grading.wire import PlannedCheck
from autograder.runtime import preload

SANDBOXED = SimpleNamespace(sandbox="bubblewrap")
PLAN = [
    PlannedCheck("at_updates::test_set_diagonal_matches_reference", "at_updates", "set_diagonal", True, "values"),
    PlannedCheck("data::test_numpy_collate_works", "data", "numpy_collate", False, "observed", True, True, True),
]


def givens_with(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "given.json").write_text('{"x": 1}')
    return folder


def test_a_kept_plan_is_read_back_whole_with_its_givens(kept_here, tmp_path, snapshot, options):
    plans = KeptPlans.of(snapshot, options(), SANDBOXED)
    assert plans.load(tmp_path / "nothing-yet") is None
    plans.keep(PLAN, givens_with(tmp_path, "recorded"))
    again = tmp_path / "again"
    assert KeptPlans.of(snapshot, options(), SANDBOXED).load(again) == PLAN
    assert (again / "data" / "given.json").read_text() == '{"x": 1}'


@pytest.mark.parametrize("change", [{"seed": 8}, {"modules": ["at_updates", "prng"]}])
def test_another_setting_lists_its_checks_again(kept_here, tmp_path, snapshot, change, options):
    KeptPlans.of(snapshot, options(), SANDBOXED).keep(PLAN, tmp_path / "none")
    assert KeptPlans.of(snapshot, options(**change), SANDBOXED).load(tmp_path / "g") is None


@pytest.mark.parametrize("change", [{"memory_mb": 1024}, {"timeout_per_function": 5.0}, {"jobs": 7}])
def test_other_limits_or_jobs_keep_the_plan(kept_here, tmp_path, snapshot, change, options):
    """What a plan lists (the checks, the givens the trusted side records) does not depend on the limits or jobs."""
    KeptPlans.of(snapshot, options(), SANDBOXED).keep(PLAN, tmp_path / "none")
    assert KeptPlans.of(snapshot, options(**change), SANDBOXED).load(tmp_path / "g") == PLAN


def test_a_changed_course_lists_its_checks_again(kept_here, tmp_path, snapshot, options):
    KeptPlans.of(snapshot, options(), SANDBOXED).keep(PLAN, tmp_path / "none")
    course = dict(snapshot.course, **{"exercises/test_at_updates.py": b"# changed\n"})
    assert KeptPlans.of(Snapshot(course, snapshot.kit), options(), SANDBOXED).load(tmp_path / "g") is None


@pytest.mark.parametrize("how", ["group-writable plan", "plan is a link", "truncated plan", "someone else's folder"])
def test_a_plan_not_as_the_grader_wrote_it_is_made_again(kept_here, tmp_path, snapshot, how, options):
    plans = KeptPlans.of(snapshot, options(), SANDBOXED)
    plans.keep(PLAN, givens_with(tmp_path, "recorded"))
    assert plans.folder is not None
    plan_file = plans.folder / "plan.json"
    if how == "group-writable plan":
        plan_file.chmod(0o664)
    elif how == "plan is a link":
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(plan_file.read_text())
        plan_file.unlink()
        plan_file.symlink_to(elsewhere)
    elif how == "truncated plan":
        plan_file.write_text(plan_file.read_text()[:40])
    else:
        plans.folder.chmod(0o777)
    assert plans.load(tmp_path / "g") is None


def test_nothing_is_kept_where_a_students_process_could_write(monkeypatch, tmp_path, snapshot, options):
    folder = tmp_path / "proofs"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    monkeypatch.setenv(preflight.REUSE_ENV, str(folder))
    plans = KeptPlans.of(snapshot, options(), SANDBOXED)
    plans.keep(PLAN, tmp_path / "none")
    assert plans.folder is None and os.listdir(folder) == []
    assert KeptPlans.of(snapshot, options(), SimpleNamespace(sandbox="none")).folder is None


def libraries(snapshot: Snapshot, *modules: str) -> set[str]:
    return {name for name in preload.grading_set(snapshot.imported_names(list(modules)))} & set(preload.LIBRARIES)


def test_a_grader_imports_before_it_forks_only_the_libraries_its_modules_use(snapshot):
    core = set(preload.CORE_LIBRARIES)
    assert libraries(snapshot, "at_updates") == core  # no torch (seconds), no Flax, no Orbax
    assert libraries(snapshot, "data") == core | {"torch", "torch.utils.data"}
    assert {"flax.linen", "optax"} <= libraries(snapshot, "training")
    # training's students never need torch (recording does not import it: test_no_library_imported.py); only the
    # trusted verifier does, for data's reference, and imports it there: preloading it would cost every student
    assert "torch" not in libraries(snapshot, "training")
    assert "orbax.checkpoint" in libraries(snapshot, "checkpointing")
    every = [module.stem for module in sorted((ROOT / "solutions").glob("*.py"))]
    assert libraries(snapshot, *every) >= core | {"torch", "flax.linen", "optax", "orbax.checkpoint"}


def test_a_kit_module_that_imports_a_library_at_import_brings_it(snapshot):
    """Followed through the kit: a check module that imports torch at module level makes any module whose checks
    import it preload torch; one that imports it inside a function (run where needed) does not."""
    kit = dict(snapshot.kit)
    kit["autograder/checks/values.py"] = kit["autograder/checks/values.py"] + b"\nimport torch\n"
    assert "torch" in libraries(Snapshot(snapshot.course, kit), "at_updates")
    kit["autograder/checks/values.py"] = snapshot.kit["autograder/checks/values.py"] + b"\ndef f():\n    import torch\n"
    assert "torch" not in libraries(Snapshot(snapshot.course, kit), "at_updates")
