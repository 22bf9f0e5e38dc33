"""A runtime audit hook (:func:`sys.addaudithook`) in the grading process, installed before the student's module is
imported: what the student's own code does that reaches into the process.

Python raises an audit event for the ways into the interpreter's internals that a static screen cannot always see
(:mod:`autograder.core.screen` reads the source): walking the heap (``gc.get_objects``, ``gc.get_referrers``),
reading frames (``sys._getframe``), ``ctypes``, rewriting a function's code or a class's members
(``object.__setattr__``: a function's ``__code__``), importing a module outside the course's list (an ``import``
statement or ``__import__``: ``importlib.import_module`` raises no event, the screen refuses ``importlib``), starting
processes. The hook reports an event only when the code that raised it is the student's (the frame
calling it is in the submission's folder): the libraries do the same all the time, legitimately. An audit hook
cannot be removed; a submission can still hide from it (it runs in the same process), so it is a signal, as the
tripwires are (:mod:`.tamper`); each report costs the student's module what its own process witnessed
(``needs review``).
"""

from __future__ import annotations

import os
import re
import sys
import types
from collections.abc import Callable

# The events reported when the student's code raises them, and what they are called in the review.
EVENTS = {
    "gc.get_objects": "walks the heap (gc.get_objects)",
    "gc.get_referrers": "walks the heap (gc.get_referrers)",
    "gc.get_referents": "walks the heap (gc.get_referents)",
    "sys._getframe": "reads the interpreter's frames (sys._getframe)",
    "sys._current_frames": "reads the interpreter's frames (sys._current_frames)",
    "sys.settrace": "traces the interpreter (sys.settrace)",
    "sys.setprofile": "traces the interpreter (sys.setprofile)",
    "sys.addaudithook": "adds an audit hook",
    "object.__setattr__": "changes a function's code or an object's class (setattr)",
    "object.__delattr__": "deletes a function's attribute (delattr)",
    "function.__new__": "makes a function from a code object",
    "code.__new__": "makes a code object",
    "exec": "runs code from a string or code object (exec)",
    "os.system": "starts a process",
    "os.exec": "starts a process",
    "os.fork": "starts a process",
    "os.forkpty": "starts a process",
    "os.posix_spawn": "starts a process",
    "os.spawn": "starts a process",
    "os.kill": "signals a process",
    "os.killpg": "signals a process",
    "subprocess.Popen": "starts a process",
    "ctypes.dlopen": "loads a C library (ctypes)",
    "ctypes.dlsym": "reaches C functions (ctypes)",
    "ctypes.addressof": "reads memory (ctypes)",
    "ctypes.cdata": "reads memory (ctypes)",
    "ctypes.string_at": "reads memory (ctypes)",
    "ctypes.wstring_at": "reads memory (ctypes)",
    "socket.connect": "opens a network connection",
    "socket.bind": "opens a network connection",
}
MAX_REPORTS = 20
# Paths into a process's memory or descriptors (its own ``/proc/self/mem``, ``/proc/self/fd/N``: where a check file
# handed over in a descriptor would be read, :class:`~autograder.grading.untrusted.child.HandedChecks`).
PROCESS_INSIDES = re.compile(r"^/proc/[^/]+/(task/[^/]+/)?(mem|fd/|fd$|map_files|environ)|^/dev/fd/")


def install(
    student_file: str, student_module: str, report: Callable[[str, int], None], allowed_imports: frozenset[str]
) -> None:
    """From now on, ``report(what, line)`` once per kind and line when the code of ``student_file`` (the module
    ``student_module``) raises one of :data:`EVENTS` (a change to its own classes and functions excepted),
    imports a module whose top level is not in ``allowed_imports``, or opens a file descriptor by number
    (``os.fdopen``: the grader's channel is one)."""
    seen: set[tuple[str, int]] = set()
    busy = [False]  # sys._getframe below raises an event of its own

    def students_line(skip_importlib: bool, anywhere: bool = False) -> int | None:
        frame: types.FrameType | None = sys._getframe(2)
        while skip_importlib and frame is not None and "importlib" in frame.f_code.co_filename:
            frame = frame.f_back
        # (a path under /proc opened through a library, pathlib's read_bytes: the student's call below it counts)
        while anywhere and frame is not None and frame.f_code.co_filename != student_file:
            frame = frame.f_back
        if frame is not None and frame.f_code.co_filename == student_file:
            return frame.f_lineno
        return None

    def hook(event: str, args: tuple) -> None:
        if busy[0] or len(seen) >= MAX_REPORTS:
            return
        what: str | None
        if event == "import":
            top = str(args[0]).split(".", 1)[0] if args else ""
            if top in allowed_imports:
                return
            what = f"imports {args[0]} (not one of the course's libraries)"
        elif event == "open":
            if args and isinstance(args[0], (str, bytes)) and PROCESS_INSIDES.search(os.fsdecode(args[0])):
                what = "reads a process's memory or file descriptors (/proc)"
            elif not args or not isinstance(args[0], int):
                return
            else:
                what = "opens a file descriptor by number (os.fdopen)"
        elif event in ("object.__setattr__", "object.__delattr__") and _own(args, student_module):
            return
        else:
            what = EVENTS.get(event) or ("reaches C code (ctypes)" if event.startswith("ctypes.") else None)
            if what is None:
                return
        busy[0] = True
        try:
            line = students_line(skip_importlib=event == "import", anywhere=what.startswith("reads a process's"))
        finally:
            busy[0] = False
        if line is None or (what, line) in seen:
            return
        seen.add((what, line))
        report(what, line)

    sys.addaudithook(hook)


def _own(args: tuple, module: str) -> bool:
    """Whether ``object.__setattr__``'s object is a class or function of the student's own module (read without
    calling anything of the object: a class's ``__module__`` through ``type``'s own lookup)."""
    obj = args[0] if args else None
    try:
        owner = type.__getattribute__(obj, "__module__") if isinstance(obj, type) else None
    except AttributeError:
        owner = None
    if owner is None and type(obj).__name__ == "function":
        owner = obj.__module__
    return owner == module
