"""A submission handed in as a notebook or an archive: read in memory, never extracted.

For :mod:`autograder.core.reading`: a module's notebook becomes its code cells (:func:`notebook_source`), and a zip
or tar is read member by member within caps (:func:`from_archive`: no member that is a link or leaves the folder,
at most :data:`MAX_ARCHIVE_FILES` files and :data:`MAX_ARCHIVE_UNPACKED` bytes unpacked).
"""

from __future__ import annotations

import posixpath
import stat

NOTEBOOK_SUFFIX = ".ipynb"
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
MAX_ARCHIVE_BYTES = 20_000_000  # an archive or a notebook (outputs included) as handed in
MAX_ARCHIVE_FILES = 2000
MAX_ARCHIVE_UNPACKED = 50_000_000
ABSENT = "is missing from your submission"


def notebook_source(data: bytes) -> str:
    """A notebook's code as a module: its code cells in order, without the autograded check cells of the course's
    nbgrader notebooks, the course's device set-up lines and IPython's ``%``/``!`` lines. Raises ValueError when it
    is not a notebook."""
    import json

    notebook = json.loads(data.decode("utf-8"))
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError("it has no cells")
    chunks = []
    for cell in notebook["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell.get("metadata"), dict) else {}
        if isinstance(meta, dict) and meta.get("grade") and not meta.get("solution"):
            continue  # a check cell: the checks are the course's own
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        lines = [
            ""
            if line.lstrip().startswith(("%", "!", "from autograder.notebook import", "use_course_backend("))
            else line
            for line in text.splitlines()
        ]
        chunks.append("\n".join(lines))
    return "\n\n".join(chunks) + "\n"


def from_notebook(data: bytes, module: str, max_bytes: int) -> tuple[bytes, str | None]:
    try:
        source = notebook_source(data).encode("utf-8")
    except (ValueError, UnicodeDecodeError) as err:
        return b"", f"{module}.py {ABSENT}: found {module}{NOTEBOOK_SUFFIX}, but it is not a notebook ({err})"
    if len(source) > max_bytes:
        return b"", f"{module}.py is larger than {max_bytes // 1000} kB (the code of {module}{NOTEBOOK_SUFFIX})"
    return source, None


def from_archive(
    name: str, data: bytes, modules, max_bytes: int
) -> tuple[dict[str, tuple[bytes, str | None]], str | None]:
    """The modules a zip or tar holds (``<module>.py``, ``<module>.ipynb``, in ``exercises/`` or one folder
    down), read in memory; or why the archive is not used (a member that is a link or leaves the folder, too many
    files, too large unpacked, not an archive)."""
    import tarfile
    import zipfile

    wanted = {}
    for module in modules:
        for stem in (f"{module}.py", f"{module}{NOTEBOOK_SUFFIX}"):
            wanted[stem] = module
    caps = _Caps(name)
    try:
        if name.lower().endswith(".zip"):
            members, why = _zip_members(data, set(wanted), caps)
        else:
            members, why = _tar_members(data, set(wanted), caps)
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError, RuntimeError) as err:
        return {}, f"{name} was not used: it could not be opened as an archive ({err})"
    if why is not None:
        return {}, why
    found: dict[str, tuple[bytes, str | None]] = {}
    for path in sorted(members, key=lambda p: (p.count("/"), p)):
        parts = path.split("/")
        base = parts[-1]
        folders = [p for p in parts[:-1] if p != "exercises"]
        if len(folders) > 1 or wanted[base] in found:
            continue
        module = wanted[base]
        if base.endswith(NOTEBOOK_SUFFIX):
            found[module] = from_notebook(members[path], module, max_bytes)
        elif len(members[path]) > max_bytes:
            found[module] = (b"", f"{module}.py is larger than {max_bytes // 1000} kB (in {name})")
        else:
            found[module] = (members[path], None)
    return found, None


class _Caps:
    """What an archive's members may be: inside the folder, :data:`MAX_ARCHIVE_UNPACKED` bytes in all."""

    def __init__(self, name: str):
        self.name = name
        self.total = 0

    def refuse(self, path: str, size: int) -> str | None:
        """Why the member ``path`` of ``size`` bytes makes the archive unused, or None."""
        clean = posixpath.normpath(path)
        if path.startswith("/") or clean == ".." or clean.startswith("../") or "\\" in path:
            return f"{self.name} was not used: {path!r} would be outside your folder"
        self.total += size
        if self.total > MAX_ARCHIVE_UNPACKED:
            return f"{self.name} was not used: more than {MAX_ARCHIVE_UNPACKED // 1_000_000} MB unpacked"
        return None


def _zip_members(data: bytes, wanted: set[str], caps: _Caps) -> tuple[dict[str, bytes], str | None]:
    """A zip's members named as in ``wanted`` (by base name), or why the zip is not used."""
    import io
    import zipfile

    name = caps.name
    members: dict[str, bytes] = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        if len(infos) > MAX_ARCHIVE_FILES:
            return {}, f"{name} was not used: more than {MAX_ARCHIVE_FILES} files"
        for info in infos:
            if stat.S_ISLNK(info.external_attr >> 16):
                return {}, f"{name} was not used: {info.filename} is a link; zip the files themselves"
            why = caps.refuse(info.filename, info.file_size)
            if why:
                return {}, why
        for info in infos:
            if not info.is_dir() and posixpath.basename(info.filename) in wanted:
                with archive.open(info) as f:
                    members[posixpath.normpath(info.filename)] = f.read(MAX_ARCHIVE_BYTES + 1)
    return members, None


def _tar_members(data: bytes, wanted: set[str], caps: _Caps) -> tuple[dict[str, bytes], str | None]:
    """A tar's members named as in ``wanted`` (by base name), or why the tar is not used."""
    import io
    import tarfile

    name = caps.name
    members: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        count = 0
        chosen: list[tarfile.TarInfo] = []
        for entry in tar:
            count += 1
            if count > MAX_ARCHIVE_FILES:
                return {}, f"{name} was not used: more than {MAX_ARCHIVE_FILES} files"
            if entry.issym() or entry.islnk():
                return {}, f"{name} was not used: {entry.name} is a link; pack the files themselves"
            if not (entry.isfile() or entry.isdir()):
                return {}, f"{name} was not used: {entry.name} is not a regular file"
            why = caps.refuse(entry.name, entry.size)
            if why:
                return {}, why
            if entry.isfile() and posixpath.basename(entry.name) in wanted:
                chosen.append(entry)
        for entry in chosen:
            packed = tar.extractfile(entry)
            members[posixpath.normpath(entry.name)] = packed.read(MAX_ARCHIVE_BYTES + 1) if packed else b""
    return members, None
