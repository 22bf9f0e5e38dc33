"""The module's checks handed to a grading process compiled, through a descriptor read and closed before pytest
starts (:class:`HandedChecks`), and collected from memory (:class:`HandedModule`): their text is nowhere the
student's code could read it.
"""

from __future__ import annotations

import os
import sys

import pytest

from autograder.grading.wire import ChildRequest


class HandedChecks:
    """The module's checks, handed to this process compiled (:meth:`~autograder.grading.isolation.scratch.Snapshot.
    hand_checks`) through a descriptor that :func:`run` reads and closes before pytest starts; pytest collects them
    from memory (:class:`HandedModule`) in place of the placeholder that stands at their path on disk. Nothing of
    their text is left for the student's code, imported later (at its first check: ``pytest_runtest_setup``): not on
    disk, not in a descriptor (``/proc/self/fd``), not in ``linecache`` nor a loader's ``get_source``
    (``inspect.getsource`` of a check reads the placeholder and fails), and the marshalled bytes are zeroed once
    loaded. What stays is the code objects themselves, which a heap walk or a ``__code__`` read could reach: the
    static screen and the audit hook flag those (:mod:`autograder.core.screen`, :mod:`.audit`)."""

    def __init__(self, path: str, code) -> None:
        self.path = path
        self.code = code

    @classmethod
    def read(cls, request: ChildRequest) -> HandedChecks | None:
        """The checks handed in ``request.checks_fd`` (the descriptor closed in any case), or None."""
        import marshal

        if request.checks_fd < 0:
            return None
        try:
            buffer = bytearray(os.fstat(request.checks_fd).st_size)
            view, done = memoryview(buffer), 0
            while done < len(buffer):
                got = os.readv(request.checks_fd, [view[done:]])
                if got <= 0:
                    break
                done += got
            try:
                code = marshal.loads(view[:done])
            finally:
                view.release()
                buffer[:] = bytes(len(buffer))
        except (OSError, ValueError, EOFError, TypeError):
            code = None  # the module's checks cannot be collected: each is reported as not run
        finally:
            os.close(request.checks_fd)
        return cls(request.handed_checks, code)

    def take(self):
        code, self.code = self.code, None
        return code

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makemodule(self, module_path, parent):
        if self.code is None or str(module_path) != self.path:
            return None
        node = HandedModule.from_parent(parent, path=module_path)
        node.handed = self
        return node


class HandedModule(pytest.Module):
    """A check file collected from the code :class:`HandedChecks` holds (once), not from its path."""

    handed: HandedChecks

    def _getobj(self):
        import types

        from _pytest.pathlib import module_name_from_path, resolve_pkg_root_and_module_name

        code = self.handed.take()
        if code is None:
            raise self.CollectError(f"the checks of {self.path.name} were already collected")
        try:  # the name pytest's importlib mode gives the file
            _, name = resolve_pkg_root_and_module_name(
                self.path, consider_namespace_packages=self.config.getini("consider_namespace_packages")
            )
        except Exception:  # noqa: BLE001 - pytest's fallback
            name = module_name_from_path(self.path, self.config.rootpath)
        module = types.ModuleType(name)
        module.__file__ = str(self.path)  # the placeholder's path: no loader, nothing to read the source from
        sys.modules[name] = module
        try:
            exec(code, module.__dict__)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
