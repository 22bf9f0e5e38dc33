"""The pool of grading processes: every process one grader starts, and every folder it makes for them.

Runs in the grader's process. A :class:`GradingPool` holds the grader's lifeline, its control group and janitor
(which removes the group and the scratch folders should the grader be killed), the kit and
checks every sandbox shows read-only (``shared``), one sandbox per student (:meth:`new_box`: a folder, a uid, a
control group and a zygote of the student's own, some started ahead so that they import the libraries while
the trusted side plans), the trusted side's zygotes (:meth:`zygote`), and every scratch folder; :meth:`close`
ends every process and removes every folder (also after an interruption).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from autograder.core.course import Course
from autograder.grading.isolation.bubblewrap import Box, isolation
from autograder.grading.isolation.cgroups import Group, grader_group
from autograder.grading.isolation.forkserver import Zygote
from autograder.grading.isolation.janitor import Janitor
from autograder.grading.isolation.lifeline import Lifeline
from autograder.grading.isolation.limits import PIDS_PER_STUDENT, Interrupted, RunAs, next_uid
from autograder.grading.isolation.limits import check as stop_if_set
from autograder.grading.isolation.processes import child_env, file_tail, start_direct
from autograder.grading.isolation.scratch import (
    Snapshot,
    remove_abandoned_scratch,
    remove_folder,
    scratch_dir,
    scratch_prefix,
)
from autograder.grading.wire import CHILD
from autograder.runtime import compile_cache
from autograder.runtime.preload import grading_set

TRUSTED_ZYGOTE = "trusted_zygote"  # the slot of a thread's trusted zygote (the only slot there is)


class GradingPool:
    """Every process and folder of one grader (module docstring). ``options``: the grader's
    :class:`~autograder.grading.grader.Options`."""

    def __init__(
        self,
        course: Course,
        options,
        stop: threading.Event,
        snapshot: Snapshot | None = None,
        trusted_cache: Callable[[object], Path | None] | None = None,
    ):
        """``trusted_cache(isolation)``: the trusted side's compilation cache kept between calls, or None (this
        run's own scratch folder)."""
        self.options = options
        self.stop = stop
        self.lifeline = Lifeline()
        self._lock = threading.Lock()
        self._scratch: set[Path] = set()
        self._local = threading.local()
        self._zygotes: list[tuple[Zygote, Path]] = []
        self._boxes: list[Box] = []  # every student's sandbox not yet closed
        self._spare_boxes: list[Box] = []  # started ahead, each given to the next student that needs one
        self.group: Group | None = None
        self.janitor: Janitor | None = None
        try:
            remove_abandoned_scratch()  # a killed grader's, the references' copies among them
            self.snapshot = snapshot or Snapshot.take(course.root)
            # What every grading process of this grader imports before it forks: the libraries of the modules graded
            self.libraries = list(grading_set(*self.snapshot.imports_of(list(options.modules))))
            # No compilation cache in the students' environment: each student gets their own (Box.folder).
            self.env = child_env()
            self.run_as = RunAs.lookup(options.run_as) if options.run_as else None
            self.isolation = isolation()
            self.group = grader_group() if self.isolation.cgroups else None
            # Removes the group and every scratch folder should this grader be killed (SIGKILL) before close()
            self.janitor = Janitor.start(
                list(self.group.paths.values()) if self.group else [],
                unified=self.group is not None and self.group.version == 2,
                scratch_prefix=scratch_prefix(),
            )
            # The kit (never a reference, nor a check), shown read-only to every student's sandbox.
            self.shared = self.scratch_dir()
            # (each grading process gets its own module's checks only, laid out in its run's folder: pipeline)
            self.snapshot.materialize(self.shared, course=False)
            _readable(self.shared)
            # The trusted side has its own compilation cache, whose path no student process is given: kept between
            # calls where the grader's own folder allows it (preflight.kept_compile_cache), else this run's.
            kept = trusted_cache(self.isolation) if trusted_cache is not None else None
            self.trusted_cache_dir = kept if kept is not None else self.scratch_dir()
            # ... and its own temporary folder (pytest's tmp_path, the reference's checkpoints), a scratch folder
            # like the others: removed by close() (after Ctrl-C or SIGTERM too), or by the next grader after a kill
            self.trusted_tmp = self.scratch_dir()
            self.trusted_env = child_env(
                dict(compile_cache.environment(self.trusted_cache_dir), TMPDIR=str(self.trusted_tmp))
            )
        except BaseException:
            self.close()
            raise

    # -- folders ----------------------------------------------------------
    def scratch_dir(self) -> Path:
        """A new scratch folder, removed by :meth:`remove` or at the latest by :meth:`close`."""
        with self._lock:
            stop_if_set(self.stop)
            path = scratch_dir()
            self._scratch.add(path)
        return path

    def remove(self, path: Path) -> None:
        remove_folder(path)
        with self._lock:
            self._scratch.discard(path)

    # -- the students' sandboxes ------------------------------------------
    def start_spares(self, count: int) -> None:
        """Start ``count`` sandboxes ahead (the first students'), so that they import while the plan is made."""
        for _ in range(count):
            self._spare_boxes.append(self.new_box())

    def starter(self, box: Box):
        """How a grading child of ``box``'s student starts: forked by the student's zygote, or a fresh interpreter."""
        if box.zygote is None:
            return start_direct(
                CHILD,
                self.shared / "kit",
                self.box_env(box),
                self.options.memory_mb,
                self.lifeline.fd,
                box=box,
                libraries=self.libraries,
            )
        return box.zygote.start

    def box_env(self, box: Box) -> dict[str, str]:
        return dict(self.env, HOME=str(box.home), TMPDIR=str(box.folder / "tmp"))

    def new_box(self) -> Box:
        """A sandbox for one student (see :class:`Box`), its zygote started (without waiting for it)."""
        folder = self.scratch_dir()
        private = self.scratch_dir()  # root's: the files the grader opens by name (stderr), never the student's
        uid = gid = None
        if self.run_as is not None:
            uid, gid = self.run_as.uid, self.run_as.gid
        elif self.isolation.privileged and self.isolation.sandbox != "none":
            uid = next_uid()
        disk_mb = self.options.disk_mb if self.isolation.sandbox != "none" else None
        group = None
        if self.group is not None:
            group = self.group.child(folder.name)
            # a backstop for all of the student's processes together; each has its own limit (Box.leaf)
            group.limit(memory_mb=self.options.memory_mb * (self.options.jobs + 1), pids=PIDS_PER_STUDENT)
        box = Box(self.isolation, folder, self.shared, group, uid, gid, self.options.memory_mb, private, disk_mb)
        with self._lock:
            self._boxes.append(box)
        if self.options.zygote:
            Zygote(
                self.shared / "kit",
                folder,
                self.box_env(box),
                self.options.memory_mb,
                self.lifeline.fd,
                self.stop,
                box=box,
                libraries=self.libraries,
            )
        with self._lock:
            if self.stop.is_set():  # close() may have run while this one started
                box.close()
                raise Interrupted()
        return box

    def take_box(self) -> Box:
        """A sandbox for the next student: a spare one started ahead, else a new one (never another student's)."""
        with self._lock:
            box = self._spare_boxes.pop(0) if self._spare_boxes else None
        return box if box is not None else self.new_box()

    def close_box(self, box: Box) -> None:
        """Every process of ``box`` killed (a double-forked one too), its group removed; its folder is kept."""
        box.close()
        with self._lock:
            if box in self._boxes:
                self._boxes.remove(box)

    def discard_box(self, box: Box) -> None:
        """``box`` closed (:meth:`close_box`) and its folders removed."""
        self.close_box(box)
        self.remove(box.folder)
        self.remove(box.private)

    def zygote_stderr(self, box: Box) -> str:
        """The last stderr of ``box``'s grading zygote (why it did not start or fork)."""
        return file_tail(box.private / "zygote-stderr.txt") if box.zygote is not None else ""

    # -- the trusted side's zygotes ---------------------------------------
    def zygote(self, slot: str = TRUSTED_ZYGOTE) -> Zygote:
        """This thread's zygote for ``slot``, started on first use; restarted if it died."""
        zygote = getattr(self._local, slot, None)
        if zygote is None or not zygote.alive():
            zygote = self.new_zygote(slot)
            setattr(self._local, slot, zygote)
        return zygote

    def has_zygote(self, slot: str = TRUSTED_ZYGOTE) -> bool:
        """Whether this thread started a zygote for ``slot`` (:meth:`zygote`)."""
        return getattr(self._local, slot, None) is not None

    def take_zygote(self, slot: str = TRUSTED_ZYGOTE) -> Zygote:
        """This thread's zygote for ``slot``, handed over: the thread no longer uses it."""
        return vars(self._local).pop(slot)

    def new_zygote(self, slot: str = TRUSTED_ZYGOTE) -> Zygote:
        """Start a zygote for ``slot`` (without waiting for its imports). It dies with the thread that started
        it, so spares are started by the thread that owns the grader."""
        trusted = slot == TRUSTED_ZYGOTE
        scratch = self.scratch_dir()
        _, kit = self.snapshot.materialize(scratch, solutions=False)
        run_as = None if trusted else self.run_as  # the trusted zygote stays with the caller
        if run_as:
            run_as.give(scratch)
        env, memory_mb = (self.trusted_env, None) if trusted else (self.env, self.options.memory_mb)
        if run_as:
            env = dict(env, HOME=str(scratch))  # a home the user may write to; each child gets its student's
        zygote = Zygote(kit, scratch, env, memory_mb, self.lifeline.fd, self.stop, run_as, libraries=self.libraries)
        with self._lock:
            self._zygotes.append((zygote, scratch))
            if self.stop.is_set():  # close() may have run while this one started
                zygote.close()
                raise Interrupted()
        return zygote

    def close(self) -> None:
        """End every zygote and remove every scratch folder (also after an interruption)."""
        with self._lock:
            boxes = list(self._boxes)
            self._boxes.clear()
            self._spare_boxes.clear()
        for box in boxes:
            box.close()
        if self.group is not None:
            self.group.remove()
            self.group = None
        with self._lock:
            for zygote, _scratch in self._zygotes:
                zygote.close()
            self._zygotes.clear()
            for path in self._scratch:
                remove_folder(path)
            self._scratch.clear()
        if self.janitor is not None:
            self.janitor.close()
            self.janitor = None
        self.lifeline.close()


def _readable(folder: Path) -> None:
    """Make ``folder`` readable (not writable) by every user: the students' uids read the kit and checks there."""
    for root, _dirs, files in os.walk(folder):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
