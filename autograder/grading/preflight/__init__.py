"""The grader proves its environment before the first student: the course's reference and its stubs, graded.

A grader that zeroes a class and blames the students is the worst thing it can
do, and nothing in a student's row tells a crash of the machine's JAX (an XLA
flag it does not know, a memory limit JAX cannot start under, a broken
install) from a crash of the student's code. So before any student,
:func:`check` grades two submissions that the course itself provides through
the very grader that will grade the class (the same sandbox, limits, XLA
flags, backend, zygotes and trusted verifier):

- the reference (``solutions/<module>.py``), which must get full marks;
- the stubs (``exercises/<module>.py``), which must get nothing, every function "not started".

Otherwise nothing is graded: :class:`PreflightFailed` carries a message for
the instructor naming what failed, under which limits, with the last lines the
crashed grading process wrote (XLA's fatal line among them). ``grade`` runs it
once per run, each Dask worker once per grader it builds, Gradescope's runner
once per submission; ``autograder preflight`` runs it alone (exit 0/1).

:class:`GraderError` is what :class:`~autograder.grading.grader.Grader` raises
when a grading process dies before the student's code was imported: the
grader's failure, never a student's score (the run stops).

The rooms: :mod:`.graded` (the check itself), :mod:`.proofs` (passes kept and reused, the trusted side's kept
compilation cache), :mod:`.interpreter` (this interpreter started as a grading process) and :mod:`.failures`
(the two errors and how a crashed process is quoted); what else is kept beside a proof for later calls of its
setting: :mod:`.plans` (the trusted side's plan), :mod:`.confirmations` (the verifier's answers),
:mod:`.rehearsal` (the pre-flight's request of the reference, which a verifier of one submission rehearses, and
its answer: the verdicts a later claim on the reference's very transcript gets) and
:mod:`.seed` (the programs of JAX's own operations its reference compiled, planted in each student's sandbox).
"""

from autograder.grading.preflight.failures import (
    TAIL_LINES,
    GraderError,
    PreflightFailed,
    fault_before_student,
    grader_error,
    last_lines,
    no_terminal_control,
)
from autograder.grading.preflight.graded import REFERENCE, STUBS, check, limits_of
from autograder.grading.preflight.interpreter import INTERPRETER_TIMEOUT, check_interpreter
from autograder.grading.preflight.proofs import (
    REUSE_ENV,
    REUSED,
    TRUSTED_COMPILED,
    Passed,
    find_proof,
    kept_compile_cache,
    kept_proof,
    machine_seen,
    proof_folder,
    proof_path,
    proven_setting,
    read_proof,
    unsafe_folder,
    vouches_for,
)
from autograder.grading.preflight.seed import StudentSeed, seed_names

__all__ = [
    "INTERPRETER_TIMEOUT",
    "REFERENCE",
    "REUSED",
    "REUSE_ENV",
    "STUBS",
    "TAIL_LINES",
    "TRUSTED_COMPILED",
    "GraderError",
    "Passed",
    "StudentSeed",
    "PreflightFailed",
    "check",
    "check_interpreter",
    "fault_before_student",
    "find_proof",
    "grader_error",
    "kept_compile_cache",
    "kept_proof",
    "last_lines",
    "limits_of",
    "machine_seen",
    "no_terminal_control",
    "proof_folder",
    "proof_path",
    "proven_setting",
    "read_proof",
    "seed_names",
    "unsafe_folder",
    "vouches_for",
]
