"""Files a student's process records are put back on disk by the trusted verifier, which may be root: a
submission that rewrites the recorded names (through ``gc``, after the check recorded them) to absolute and
``../`` ones made the verifier write files of its choosing (a ``.pth`` in ``site-packages`` ran its code as
root in the next Python process; on Gradescope it rewrote ``results.json``). Graded for real (``--only
checkpointing``): the forger earns nothing for ``save_checkpoint``, nothing is written outside the run's folders,
and the honest student keeps full marks (issue 32, 1)."""

from __future__ import annotations

import csv
import os
import secrets
import shutil
import subprocess
import sys

from support import ROOT

FORGER = '''

import gc as _gc

_honest_save_checkpoint = save_checkpoint


def save_checkpoint(path, state):
    """Saves honestly, then renames the files its process recorded for the check's earlier save."""
    _honest_save_checkpoint(path, state)
    for _obj in _gc.get_objects():
        if type(_obj).__name__ != "ChildReporter":
            continue
        for _calls in list(_obj.calls.values()):
            for _encoded in list(_calls.values()):
                _tree = _encoded.get("tree") if isinstance(_encoded, dict) else None
                if isinstance(_tree, list) and _tree and _tree[0] == "dict":
                    for _i, _entry in enumerate(_tree[2]):
                        if _entry[0][0] == "py" and isinstance(_entry[1], list) and _entry[1][0] == "np":
                            _where = "{outside}/" if _i % 2 == 0 else "../../../../../../../../../..{outside}/"
                            _entry[0][1] = _where + "{mark}" + str(_i) + ".pth"
'''


def test_a_forged_file_name_writes_nothing_outside_and_earns_nothing(tmp_path):
    mark = "planted-" + secrets.token_hex(4)
    outside = tmp_path / "outside"
    outside.mkdir()
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "course.toml", course / "course.toml")
    for folder in ("exercises", "solutions"):
        shutil.copytree(ROOT / folder, course / folder, ignore=shutil.ignore_patterns("__pycache__"))
    reference = (ROOT / "solutions" / "checkpointing.py").read_text()
    students = tmp_path / "class"
    for student, source in (("honest", reference), ("forger", reference + FORGER.format(outside=outside, mark=mark))):
        (students / student).mkdir(parents=True)
        (students / student / "checkpointing.py").write_text(source)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("CI", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(students),
            "--out",
            str(out),
            "--only",
            "checkpointing",
            "--course",
            str(course),
            "--jobs",
            "1",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    planted = list(outside.iterdir())  # both the absolute and the ../ names lead there
    assert planted == [], f"the verifier wrote {planted}"
    with open(out / "grades.csv", newline="", encoding="utf-8") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert rows["honest"]["score"] == rows["honest"]["max_score"]
    assert float(rows["forger"]["checkpointing.save_checkpoint"]) == 0
