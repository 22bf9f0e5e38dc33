"""``grade``'s progress line on a terminal (stderr): students and modules graded, elapsed time, an ETA."""

from __future__ import annotations

import sys
import threading
import time


class Progress:
    """``graded 3/10 students, 14/40 modules  elapsed 0:42  ETA 1:38`` on one terminal line (stderr), only on
    a TTY. It moves with every module graded (:meth:`tasks` and :meth:`task_done`, called by
    :meth:`ClassExecutor.grade_class <autograder.grading.executor.ClassExecutor.grade_class>`: one task per module of a student), not only when a whole student is done;
    the ETA is shown once a module has been graded (before that there is nothing to estimate from)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self.start = time.monotonic()
        self.students = (0, 0)
        self.total_tasks = 0
        self.tasks_done = 0
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            self.students = (done, total)
            self._show()

    def tasks(self, total: int) -> None:
        """``total`` modules are to be graded in this run."""
        with self._lock:
            self.total_tasks, self.tasks_done = total, 0
            self._show()

    def task_done(self) -> None:
        with self._lock:
            self.tasks_done += 1
            self._show()

    def line(self) -> str:
        done, total = self.students
        elapsed = time.monotonic() - self.start
        text = f"graded {done}/{total} students"
        eta = None
        if self.total_tasks:
            text += f", {self.tasks_done}/{self.total_tasks} modules"
            if self.tasks_done:
                eta = elapsed / self.tasks_done * (self.total_tasks - self.tasks_done)
        elif done and total:
            eta = elapsed / done * (total - done)
        text += f"  elapsed {_clock(elapsed)}"
        if eta is not None:
            text += f"  ETA {_clock(eta)}"
        return text

    def _show(self) -> None:
        if not self.enabled:
            return
        self.stream.write(f"\r{self.line()}   ")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return (
        f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else f"{seconds // 60}:{seconds % 60:02d}"
    )
