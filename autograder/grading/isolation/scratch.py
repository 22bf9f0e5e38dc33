"""Scratch folders and the instructor's files copied into them.

Runs in the grader's process. :class:`Snapshot` reads the course and the kit into memory once; every grading
process gets a fresh private copy in a folder of its own (:func:`scratch_dir`, named after the grader's
process), and :func:`remove_abandoned_scratch` removes the folders of graders that were killed. A student's
folder can be a size-limited file system of its own (:func:`limit_size`): a disk quota per student.
"""

from __future__ import annotations

import ast
import ctypes
import errno
import json
import marshal
import os
import shutil
import stat
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autograder.core import syntax
from autograder.grading.isolation.imports import follow_imports
from autograder.grading.isolation.janitor import remove_folders
from autograder.grading.isolation.limits import alive

MAX_COPIED_FILES = 20_000  # what copy_plain_files copies at most (a whole course's compiled programs: about 1000)
MAX_COPIED_BYTES = 1 << 30


@dataclass
class Snapshot:
    """The instructor's files, read once: ``{relative path: bytes}`` for the course and the kit."""

    course: dict[str, bytes]
    kit: dict[str, bytes]

    @classmethod
    def take(cls, course_root: Path) -> Snapshot:
        course_root = Path(course_root)
        course: dict[str, bytes] = {"course.toml": (course_root / "course.toml").read_bytes()}
        for pattern in ("conftest.py", "exercises/*.py", "solutions/*.py"):
            for path in sorted(course_root.glob(pattern)):
                course[path.relative_to(course_root).as_posix()] = path.read_bytes()
        course["pytest.ini"] = b"[pytest]\n"
        kit_root = Path(__file__).resolve().parents[2]
        kit = {
            f"autograder/{p.relative_to(kit_root).as_posix()}": p.read_bytes() for p in sorted(kit_root.rglob("*.py"))
        }
        return cls(course, kit)

    def materialize(
        self, scratch: Path, *, solutions: bool = True, course: bool = True, kit: bool = True
    ) -> tuple[Path, Path]:
        """Write the private copy into ``scratch`` (the course, the kit, or both); returns (course root, kit folder)."""
        for rel, data in self.course.items() if course else ():
            if not solutions and rel.startswith("solutions/"):
                continue
            _write(scratch / "course" / rel, data)
        for rel, data in self.kit.items() if kit else ():
            _write(scratch / "kit" / rel, data)
        return scratch / "course", scratch / "kit"

    def module_course(self, scratch: Path, module: str) -> Path:
        """The course as one grading process of ``module`` sees it, written into ``scratch``: ``course.toml``, the
        course's ``conftest.py`` and ``pytest.ini``, and that module's stub and checks only (no other module's
        checks, hidden ones included; no reference); returns its root."""
        wanted = {"conftest.py", "pytest.ini", f"exercises/{module}.py", f"exercises/test_{module}.py"}
        for rel, data in self.course.items():
            if rel in wanted:
                _write(scratch / "course" / rel, data)
        _write(scratch / "course" / "course.toml", course_toml_of(self.course["course.toml"], module))
        return scratch / "course"

    def hand_checks(self, course_root: Path, module: str) -> bytes | None:
        """``module``'s check file as its grading process runs it, compiled here (``co_filename`` its path under
        ``course_root``) and marshalled, to be handed over through a descriptor
        (:class:`~autograder.grading.untrusted.child.HandedChecks`); on the sandbox's disk the file is replaced by a
        placeholder: nothing of its text (a hidden check's body) is there for the student's code to read. None
        when the course has no such file."""
        source = self.course.get(f"exercises/test_{module}.py")
        if source is None:
            return None
        path = course_root / "exercises" / f"test_{module}.py"
        tree = syntax.parse(source, str(path))
        hidden = self._hidden_names(module)
        for node in tree.body:  # a hidden check's docstring (a function's __doc__ is one attribute away) dropped
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in hidden:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    node.body[0] = ast.copy_location(ast.Pass(), first)
        # dont_inherit: none of this process's future flags; optimize=0: as `python -I` runs it (asserts kept)
        code = syntax.compile_tree(tree, str(path), "exec", dont_inherit=True, optimize=0)
        _write(path, CHECKS_PLACEHOLDER.format(module=module).encode())
        return marshal.dumps(code)

    def _hidden_names(self, module: str) -> set[str]:
        """The checks ``course.toml`` lists as hidden for ``module``'s functions."""
        import tomllib

        try:
            data = tomllib.loads(self.course["course.toml"].decode("utf-8"))
        except (KeyError, ValueError):
            return set()
        return {
            name
            for mod in data.get("modules", [])
            if isinstance(mod, dict) and mod.get("name") == module
            for fn in mod.get("functions", [])
            if isinstance(fn, dict)
            for name in fn.get("hidden", [])
            if isinstance(name, str)
        }

    def imported_names(self, modules: list[str]) -> set[str]:
        """The top-level names imported (at module level or in a function) by what grading ``modules`` runs: each
        module's stub, checks and reference, the course's ``conftest.py``, the grading processes' own kit modules,
        and every kit module these import, followed (:func:`autograder.runtime.preload.grading_set` turns them into
        the libraries imported before the fork)."""
        return self.imports_of(modules)[0]

    def imports_of(self, modules: list[str]) -> tuple[set[str], set[str]]:
        """:meth:`imported_names`, and the kit's modules (dotted names) reached on the way, in one reading of the
        files (:func:`autograder.runtime.preload.grading_set` imports the check modules among them before the fork)."""
        names, files = follow_imports(self.course, self.kit, modules)
        return names, {rel[: -len(".py")].removesuffix("/__init__").replace("/", ".") for rel in files}

    def hidden_lines(self, module: str) -> frozenset[str]:
        """The lines of ``module``'s hidden checks that no other part of its check file holds, squeezed
        (:func:`squeeze`; at least :data:`HIDDEN_LINE_CHARS` characters left): a message from the student's process
        quoting one is withheld (:func:`withhold_hidden`)."""
        source = self.course.get(f"exercises/test_{module}.py")
        if source is None:
            return frozenset()
        try:
            tree = syntax.parse(source)
        except (ValueError, SyntaxError):
            return frozenset()
        hidden = self._hidden_names(module)
        lines = [squeeze(line) for line in source.decode("utf-8", "replace").splitlines()]
        inside: set[int] = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in hidden:
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                inside.update(k for k in range(first - 1, node.end_lineno or node.lineno) if k < len(lines))
        public = {line for k, line in enumerate(lines) if k not in inside}
        return frozenset(lines[k] for k in inside if len(lines[k]) >= HIDDEN_LINE_CHARS and lines[k] not in public)


CHECKS_PLACEHOLDER = (
    '"""The checks of {module}: the grader handed them to this grading process compiled, through a file descriptor '
    'read and closed before your code ran; nothing of them is on this disk."""\n'
)
HIDDEN_LINE_CHARS = 12
WITHHELD = (
    "(this message quoted the source of one of the course's hidden checks: withheld; a check's own messages never do)"
)


def squeeze(text: str) -> str:
    """``text`` without whitespace, control and invisible characters: what is compared of a hidden check's lines
    (a student's copy may be indented otherwise, or split by a character the feedback drops)."""
    return "".join(c for c in text if not c.isspace() and unicodedata.category(c)[0] != "C")


def withhold_hidden(text: str, hidden: frozenset[str]) -> str:
    """``text`` (from a student's process), or :data:`WITHHELD` where it quotes a line of a hidden check
    (:meth:`Snapshot.hidden_lines`): a submission that read them would send them back into its feedback this way
    (where hidden checks reach students on Gradescope). A second wall: the student's process is never handed
    their text (:meth:`Snapshot.hand_checks`)."""
    if not hidden or not text:
        return text
    squeezed = squeeze(text)
    return WITHHELD if any(line in squeezed for line in hidden) else text


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


SCRATCH_PREFIX = "autograder-"


def _pid_namespace() -> int | None:
    """This process's pid namespace (Linux), or None where it cannot be known."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def scratch_prefix() -> str:
    """The path every scratch folder of this process starts with (``<tmp>/autograder-<pid>x<pid namespace>-``);
    "" where the pid namespace cannot be known (the folders are then named after no process)."""
    namespace = _pid_namespace()
    if namespace is None:
        return ""
    return os.path.join(tempfile.gettempdir(), f"{SCRATCH_PREFIX}{os.getpid()}x{namespace}-")


def scratch_dir() -> Path:
    """A new private folder in the temporary folder, named after the process that made it
    (:func:`scratch_prefix`, see :func:`remove_abandoned_scratch`)."""
    prefix = scratch_prefix()
    return Path(tempfile.mkdtemp(prefix=os.path.basename(prefix) or SCRATCH_PREFIX))


def remove_abandoned_scratch() -> list[Path]:
    """Remove the scratch folders of graders that are gone; returns them.

    A grader killed with SIGKILL (or a machine that lost power) cannot clean up: its folders stay,
    among them copies of the course with the references. The next grader that starts with the
    same temporary folder removes every folder named after a process of its own pid namespace
    that no longer exists (a live one, or one of another namespace, is left alone)."""
    namespace = _pid_namespace()
    if namespace is None:
        return []
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*x*-*"):
        pid, _, rest = path.name[len(SCRATCH_PREFIX) :].partition("x")
        if not pid.isdigit() or rest.split("-", 1)[0] != str(namespace) or alive(int(pid)):
            continue
        try:
            if not path.is_dir() or path.is_symlink() or (path.lstat().st_uid != os.getuid() and os.getuid() != 0):
                continue
        except OSError:
            continue
        remove_folder(path)
        removed.append(path)
    return removed


_MS_NOSUID, _MS_NODEV = 2, 4


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def limit_size(folder: Path, size_mb: int) -> bool:
    """Mount a ``size_mb`` MB tmpfs of its own on the (empty) ``folder`` (root-owned, mode 0755): whatever is
    written below it counts against that size, never against the machine's disk (a write past it fails with
    ``ENOSPC``). False where this process may not mount (not root, a container without the capability)."""
    if os.geteuid() != 0:
        return False
    options = f"size={int(size_mb)}m,mode=0755,uid=0,gid=0".encode()
    if _libc().mount(b"tmpfs", str(folder).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
        return False
    return True


def remove_folder(folder: Path) -> None:
    """Remove a scratch folder, first detaching a size-limited file system mounted on it (:func:`limit_size`)."""
    remove_folders([folder])


def no_space(err: BaseException) -> bool:
    """Whether ``err`` is a write refused because a file system (a student's quota) is full."""
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)


def course_toml_of(course_toml: bytes, module: str) -> bytes:
    """``course.toml`` as one grading process of ``module`` needs it: its limits and settings, and that module's
    entry only (no other module's functions, hints or hidden checks; no deliberate gaps, which only
    ``check-course`` reads). Written back as TOML and read again: the result must hold exactly that, or the
    course's own file is the answer (nothing is lost, nothing changes meaning)."""
    import tomllib

    data = tomllib.loads(course_toml.decode("utf-8"))
    kept = {key: value for key, value in data.items() if key not in ("modules", "deliberate_gaps")}
    kept["modules"] = [m for m in data.get("modules", []) if isinstance(m, dict) and m.get("name") == module]
    try:
        text = "".join(f"{_toml_key(key)} = {_toml_value(value)}\n" for key, value in kept.items())
        if tomllib.loads(text) == kept:
            return text.encode("utf-8")
    except (TypeError, ValueError):
        pass
    return course_toml


def _toml_key(key: str) -> str:
    return key if key and all(c.isalnum() or c in "_-" for c in key) and key.isascii() else json.dumps(key)


def _toml_value(value) -> str:
    """One TOML value on one line (inline tables and arrays); what :func:`course_toml_of` checks by reading it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML for {type(value).__name__}")


def copy_plain_files(
    source: Path,
    dest: Path,
    *,
    max_files: int = MAX_COPIED_FILES,
    max_bytes: int = MAX_COPIED_BYTES,
    only: Callable[[str], bool] | None = None,
) -> tuple[int, int]:
    """Copy the plain files directly in ``source`` into ``dest`` (made private), by the grader, which may read what
    a student must not: never through a link (``source`` itself included), no folder, no pipe waited on, those
    named as ``only`` accepts, at most ``max_files`` and ``max_bytes``; each keeps its time. How many, how big."""
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        folder = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY)
    except OSError:
        return 0, 0
    files = size = 0
    try:
        for name in sorted(n for n in os.listdir(folder) if only is None or only(n)):
            if files >= max_files:
                break
            try:  # opened in the folder opened above: a link put in place of source since is not followed
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
            except OSError:
                continue
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or size + st.st_size > max_bytes:
                    continue
                with os.fdopen(os.dup(fd), "rb") as f, open(dest / name, "wb") as out:
                    shutil.copyfileobj(f, out)
                os.utime(dest / name, ns=(st.st_atime_ns, st.st_mtime_ns))  # when it was written, kept
            finally:
                os.close(fd)
            files, size = files + 1, size + st.st_size
    finally:
        os.close(folder)
    return files, size
