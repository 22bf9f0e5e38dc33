"""The Markdown report of ``autograder mutate`` (what it prints and ``--report`` writes): one row per module
(mutants, killed, timed out, survived, equivalent, score), then every survivor with its note, the mutants listed as
equivalent, and the listed ones that no longer survive.
"""

from __future__ import annotations

from autograder.authoring.mutation_results import ERROR, KILLED, TIMEOUT, Listed, ModuleRun, score


def report(
    runs: list[ModuleRun], listed: Listed, *, seconds: float, jobs: int, title: str = "Mutation testing of the checks"
) -> str:
    """The Markdown report of ``runs``: the table of scores, then the survivors, the equivalent mutants and the
    listed ones no longer surviving."""
    return "\n".join(_table(runs, listed, seconds, jobs, title) + _survivors(runs, listed)) + "\n"


def _table(runs: list[ModuleRun], listed: Listed, seconds: float, jobs: int, title: str) -> list[str]:
    lines = [
        f"# {title}",
        "",
        "`autograder mutate` (or `python benchmarks/mutation.py`): each mutant of a reference function run through its",
        "module's checks as a submission (`--grading -x`). Score = killed / (mutants - listed equivalent).",
        "",
        f"Whole run: {seconds:.0f} s wall clock with {jobs} worker process(es).",
        "",
        "| module | mutants | killed | timeout | survived | equivalent | score | seconds |",
        "|---|---|---|---|---|---|---|---|",
    ]
    all_killed = all_total = 0
    for run in runs:
        if run.problem:
            lines.append(f"| {run.module} | - | - | - | - | - | not scored | {run.seconds:.0f} |")
            continue
        killed, surv, eq, total = score(run, listed)
        all_killed, all_total = all_killed + killed, all_total + total
        timeouts = sum(r.outcome == TIMEOUT for r in run.results)
        pct = f"{100 * killed / total:.0f}%" if total else "-"
        lines.append(
            f"| {run.module} | {len(run.results)} | {killed - timeouts} | {timeouts} | {surv} | {eq} | {pct} | {run.seconds:.0f} |"
        )
    if all_total:
        lines.append(f"| **all** | | | | | | **{100 * all_killed / all_total:.0f}%** | |")
    problems = [run for run in runs if run.problem]
    if problems:
        lines += ["", "## Modules not scored", ""] + [f"- `{run.module}`: {run.problem}" for run in problems]
    return lines


def _survivors(runs: list[ModuleRun], listed: Listed) -> list[str]:
    """The report's lists: every survivor (with its note), the equivalent mutants, the stale entries of the list."""
    lines = ["", "## Surviving mutants", ""]
    survivors = [
        r
        for run in runs
        for r in run.results
        if r.outcome not in (KILLED, TIMEOUT) and r.mutant.id not in listed.equivalent
    ]
    if not survivors:
        lines.append("None: every mutant not listed as equivalent was killed.")
    for run in runs:
        for r in run.results:
            if r.outcome in (KILLED, TIMEOUT) or r.mutant.id in listed.equivalent:
                continue
            note = f"killable: {listed.killable[r.mutant.id]}" if r.mutant.id in listed.killable else "NOT CLASSIFIED"
            if r.outcome == ERROR:
                note = f"error (counted as survivor): {r.check.strip().splitlines()[-1] if r.check.strip() else ''}"
            lines.append(f"- `{r.mutant.id}` (line {r.mutant.line}): {note}")
    lines += ["", "## Listed as equivalent (not scored)", ""]
    for run in runs:
        for r in run.results:
            if r.outcome not in (KILLED, TIMEOUT) and r.mutant.id in listed.equivalent:
                lines.append(f"- `{r.mutant.id}`: {listed.equivalent[r.mutant.id]}")
    gone = set(listed.equivalent) - {
        r.mutant.id for run in runs for r in run.results if r.outcome not in (KILLED, TIMEOUT)
    }
    ran = {run.module for run in runs}
    stale = sorted(i for i in gone if i.split(".")[0] in ran)
    if stale:
        lines += ["", "## Listed as equivalent but killed or gone (remove from the list)", ""] + [
            f"- `{i}`" for i in stale
        ]
    return lines
