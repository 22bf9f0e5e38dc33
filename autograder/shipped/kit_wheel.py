"""The kit as a wheel, for the environments that grade outside the instructor's venv.

A platform's environment (Gradescope's ``/autograder/venv``, Classroom 50's
runner venv) gets the pinned stack from ``requirements.txt`` and the kit from
this wheel (``pip install --no-deps``): the ``autograder`` command and, above
all, the ``jax_course`` pytest plugin (the ``pytest11`` entry point), without
which pytest refuses ``--grading``/``--results-json`` and grading finds no
checks. The wheel is written directly (a zip with its ``.dist-info``), with
fixed timestamps, so a bundle holding it is byte-identical for the same kit.
"""

from __future__ import annotations

import base64
import hashlib
import io
import tomllib
import zipfile
from pathlib import Path

NO_BYTECODE = ("__pycache__", ".pyc", ".pyo")


def wheel_name(pyproject: Path) -> str:
    project = tomllib.loads(Path(pyproject).read_text(encoding="utf-8"))["project"]
    return f"{_dist(project['name'])}-{project['version']}-py3-none-any.whl"


def _dist(name: str) -> str:
    return name.replace("-", "_").replace(".", "_")


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def wheel_files(package: Path, pyproject: Path) -> dict[str, bytes]:
    """``{path in the wheel: bytes}``: the package ``package`` (sources only) and its ``.dist-info``."""
    package = Path(package)
    project = tomllib.loads(Path(pyproject).read_text(encoding="utf-8"))["project"]
    dist = f"{_dist(project['name'])}-{project['version']}"
    files: dict[str, bytes] = {}
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(package.parent).as_posix()
        if path.is_file() and not path.is_symlink() and not any(part in rel for part in NO_BYTECODE):
            files[rel] = path.read_bytes()
    metadata = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project.get('description', '')}",
        f"Requires-Python: {project.get('requires-python', '>=3.11')}",
        *(f"Requires-Dist: {d}" for d in project.get("dependencies", [])),
    ]
    files[f"{dist}.dist-info/METADATA"] = ("\n".join(metadata) + "\n").encode()
    files[f"{dist}.dist-info/WHEEL"] = (
        # the generator keeps the name it had in autograder.platforms: the wheel (and every bundle) byte for byte as before
        b"Wheel-Version: 1.0\nGenerator: autograder.platforms.kit_wheel\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    entry_points = []
    for group, entries in [("console_scripts", project.get("scripts", {})), *project.get("entry-points", {}).items()]:
        if entries:
            entry_points += [f"[{group}]", *(f"{k} = {v}" for k, v in sorted(entries.items())), ""]
    files[f"{dist}.dist-info/entry_points.txt"] = "\n".join(entry_points).encode()
    files[f"{dist}.dist-info/top_level.txt"] = f"{package.name}\n".encode()
    record = [f"{name},{_record_hash(data)},{len(data)}" for name, data in files.items()]
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record + [f"{dist}.dist-info/RECORD,,"]) + "\n").encode()
    return files


def build_wheel(package: Path, pyproject: Path, out_dir: Path) -> Path:
    """Write the kit's wheel into ``out_dir``; its path."""
    out = Path(out_dir) / wheel_name(pyproject)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(wheel_bytes(package, pyproject))
    return out


def wheel_bytes(package: Path, pyproject: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in wheel_files(package, pyproject).items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buffer.getvalue()
