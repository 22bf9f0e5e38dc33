"""What students really hand in (issue 44, finding 3): a module's notebook, a zip or tar of the submission, a
"Download ZIP" folder nested one level; hostile archives are not used and say why; anything else that looks like
a submission is named ("found X, expected Y"), never a silent "missing"."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
import zipfile

import pytest

from autograder.core.submission import MAX_ARCHIVE_FILES, notebook_source, read_submission

MODULES = ("at_updates", "prng")
SOURCE = b"import jax.numpy as jnp\n\n\ndef clamp_at(x, i, lo, hi):\n    return x\n"


def notebook(*cells: tuple[str, str, dict]) -> bytes:
    return json.dumps(
        {
            "cells": [
                {"cell_type": kind, "metadata": {"nbgrader": meta} if meta else {}, "source": text}
                for kind, text, meta in cells
            ],
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    ).encode()


COURSE_NOTEBOOK = notebook(
    ("markdown", "# at_updates", {"grade": False, "solution": False}),
    (
        "code",
        "from autograder.notebook import use_course_backend\nuse_course_backend()  # devices\n\nimport jax.numpy as jnp",
        {"grade": False, "solution": False, "grade_id": "setup"},
    ),
    ("code", "def clamp_at(x, i, lo, hi):\n    return x", {"grade": False, "solution": True}),
    (
        "code",
        "from autograder.notebooks.runtime import check\ncheck('at_updates', 'clamp_at', globals())",
        {
            "grade": True,
            "solution": False,
            "points": 2,
        },
    ),
    ("code", "%timeit clamp_at(1, 2, 3, 4)", {}),
)


def test_a_course_notebook_is_its_code_cells_without_check_cells_or_magics(tmp_path):
    source = notebook_source(COURSE_NOTEBOOK)
    assert "def clamp_at" in source and "import jax.numpy" in source
    assert "check(" not in source and "use_course_backend" not in source and "%timeit" not in source
    compile(source, "nb", "exec")
    (tmp_path / "erin").mkdir()
    (tmp_path / "erin" / "at_updates.ipynb").write_bytes(COURSE_NOTEBOOK)
    files, missing = read_submission(tmp_path / "erin", MODULES)
    assert files["at_updates"].decode() == source
    assert missing == {"prng": "prng.py is missing from your submission"}


def _zip(entries: dict[str, bytes], links: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def _tar(entries: dict[str, bytes], link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            archive.addfile(info)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "name,data",
    [
        ("submission.zip", _zip({"at_updates.py": SOURCE})),
        ("work.zip", _zip({"jax-course-main/exercises/at_updates.py": SOURCE, "jax-course-main/README.md": b"x"})),
        ("hw.tar.gz", _tar({"exercises/at_updates.py": SOURCE})),
        ("nb.zip", _zip({"at_updates.ipynb": COURSE_NOTEBOOK})),
    ],
)
def test_a_zip_or_tar_of_the_submission_is_read_in_memory(tmp_path, name, data):
    (tmp_path / "kate").mkdir()
    (tmp_path / "kate" / name).write_bytes(data)
    files, missing = read_submission(tmp_path / "kate", MODULES)
    assert "def clamp_at" in files["at_updates"].decode()
    assert list(missing) == ["prng"] and sorted(os.listdir(tmp_path / "kate")) == [name], "nothing extracted"


@pytest.mark.parametrize(
    "data,why",
    [
        (_zip({"at_updates.py": SOURCE}, links=("exercises/prng.py",)), "is a link"),
        (_zip({"../at_updates.py": SOURCE}), "outside your folder"),
        (_zip({"/tmp/at_updates.py": SOURCE}), "outside your folder"),
        (_tar({"at_updates.py": SOURCE}, link="prng.py"), "is a link"),
        (_tar({"../../at_updates.py": SOURCE}), "outside your folder"),
        (_zip({f"f{i}.txt": b"" for i in range(MAX_ARCHIVE_FILES + 1)}), f"more than {MAX_ARCHIVE_FILES} files"),
        (_zip({"at_updates.py": b"#" * 60_000_000}), "MB unpacked"),
        (b"PK\x03\x04 not a zip at all", "could not be opened as an archive"),
    ],
)
def test_a_hostile_archive_is_not_used_and_says_why(tmp_path, data, why):
    name = "submission.zip" if data.startswith(b"PK") else "submission.tar.gz"
    (tmp_path / "mal").mkdir()
    (tmp_path / "mal" / name).write_bytes(data)
    files, missing = read_submission(tmp_path / "mal", MODULES)
    assert files == {}
    assert why in missing["at_updates"] and f"found {name} was not used" in missing["at_updates"], missing
    assert sorted(os.listdir(tmp_path / "mal")) == [name] and not (tmp_path / "at_updates.py").exists()


def test_a_folder_nested_one_level_is_the_submission(tmp_path):
    inner = tmp_path / "liam" / "jax-course-main" / "exercises"
    inner.mkdir(parents=True)
    (inner / "at_updates.py").write_bytes(SOURCE)
    (inner / "test_at_updates.py").write_bytes(b"# the course's checks\n")
    (tmp_path / "liam" / ".DS_Store").write_bytes(b"")
    files, missing = read_submission(tmp_path / "liam", MODULES)
    assert files == {"at_updates": SOURCE} and list(missing) == ["prng"]
    two = tmp_path / "deep" / "a" / "b" / "exercises"
    two.mkdir(parents=True)
    (two / "at_updates.py").write_bytes(SOURCE)
    files, missing = read_submission(tmp_path / "deep", MODULES)
    assert files == {}, "only one level down"


def test_a_nested_link_is_not_followed(tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "at_updates.py").write_bytes(SOURCE)
    (tmp_path / "sly").mkdir()
    (tmp_path / "sly" / "repo").symlink_to(tmp_path / "target")
    files, _ = read_submission(tmp_path / "sly", MODULES)
    assert files == {}


@pytest.mark.parametrize(
    "name", ["at_update.py", "At_Updates (1).py", "at_updates.py.txt", "Untitled.ipynb", "homework.rar"]
)
def test_anything_else_that_looks_like_a_submission_is_named(tmp_path, name):
    (tmp_path / "mo").mkdir()
    (tmp_path / "mo" / name).write_bytes(SOURCE)
    files, missing = read_submission(tmp_path / "mo", MODULES)
    assert files == {}
    why = missing["at_updates"]
    assert why.startswith("at_updates.py is missing from your submission: found ") and name in why, why
    assert "expected at_updates.py" in why and not why.rstrip().endswith(("),", ","))


# -- given code (issue 44, finding 8): one rule for every module ------------------------------------

from support import ROOT  # noqa: E402

from autograder.core.course import load_course  # noqa: E402
from autograder.core.submission import changed_givens, given_definitions  # noqa: E402

COURSE = load_course(ROOT)
GIVEN = [
    (module.name, name)
    for module in COURSE.modules
    for name in given_definitions(
        (ROOT / "exercises" / f"{module.name}.py").read_text(), {fn.name for fn in module.functions}
    )
]


def test_every_module_with_given_code_is_covered():
    modules = {m for m, _ in GIVEN}
    assert {"pytrees", "batchnorm", "dropout_rngs", "parallel"} <= modules, modules
    assert ("pytrees", "make_regression_data") in GIVEN and ("batchnorm", "BNClassifier") in GIVEN


@pytest.mark.parametrize("module,name", GIVEN, ids=lambda v: str(v))
def test_a_changed_given_definition_is_named_and_nothing_else(module, name):
    import ast

    source = (ROOT / "exercises" / f"{module}.py").read_text()
    graded = {fn.name for fn in COURSE.module(module).functions}
    assert changed_givens(source, source, graded) == []
    node = given_definitions(source, graded)[name]
    lines = source.splitlines()
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        indent = " " * (node.body[-1].col_offset)
        lines.insert(node.end_lineno, f"{indent}_student_was_here = 1")  # a changed body
    else:
        lines[node.lineno - 1] = lines[node.lineno - 1] + "  # a comment changes nothing"
        lines.insert(node.end_lineno, f"{name} = None")  # rebound: changed
    changed = "\n".join(lines) + "\n"
    assert changed_givens(changed, source, graded) == [name]
    reformatted = source.replace('"""', "'''")  # docstrings and quotes are not the code
    assert changed_givens(reformatted, source, graded) == []


@pytest.mark.parametrize("module", [m.name for m in COURSE.modules])
def test_the_reference_handed_in_changes_no_given_code(module):
    graded = {fn.name for fn in COURSE.module(module).functions}
    reference = (ROOT / "solutions" / f"{module}.py").read_text()
    assert changed_givens(reference, (ROOT / "exercises" / f"{module}.py").read_text(), graded) == []
