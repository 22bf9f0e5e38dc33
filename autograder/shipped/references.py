"""The references a shipped environment carries: which modules' references grading some modules loads
(:func:`references_needed`), and the instructor seed drawn from them (:func:`instructor_seed`), which a runner that
grades without a command line uses."""

from __future__ import annotations

from pathlib import Path

from autograder.core.oracle import siblings_named


def references_needed(course_root: Path, modules: tuple[str, ...]) -> set[str]:
    """The modules whose references grading ``modules`` loads: their own, and every module their checks'
    scenarios take a reference from (``sibling(reference, "data")``), and so on (checkpointing's scenario
    needs training's, whose scenario needs data's). A bundle without them gives its reference 0."""
    needed, todo = set(), list(modules)
    while todo:
        module = todo.pop()
        if module not in needed:
            needed.add(module)
            checks = (Path(course_root) / "exercises" / f"test_{module}.py").read_text(encoding="utf-8")
            todo.extend(siblings_named(checks))
    return needed


def instructor_seed(secret: dict[str, bytes]) -> int:
    """An instructor seed for a runner that grades without a command line (the Gradescope bundle): drawn from
    files students never see (``secret``: the references), so it is the same for the same bundle (builds stay
    byte-identical) and a student cannot compute it; never ``None``, so such a runner never grades on the
    published inputs a release recorded answers for."""
    import hashlib

    digest = hashlib.sha256(b"autograder instructor seed\0")
    for name, data in sorted(secret.items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return int.from_bytes(digest.digest()[:4], "big") & 0x7FFFFFFF
