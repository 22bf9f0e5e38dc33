"""Isolation: what holds a student's processes inside limits. Runs in the grader's process (``zygote`` and
``lifeline``'s watcher run in the student's own, forked before any student code).

- :mod:`.limits`: the limits, faults and results of one run, the per-student uids, ``--run-as``
- :mod:`.scratch`: scratch folders, the instructor's files copied into them
- :mod:`.cgroups`: one control group per student
- :mod:`.bubblewrap`: the sandbox (namespaces, mounts, the student's uid) and what this machine allows
- :mod:`.processes`: starting a limited ``python -I``
- :mod:`.supervise`: watching a run's time, memory and event channel
- :mod:`.channel`: decoding the event channel's hostile bytes within hard caps (the grader's reading side of the
  untrusted child's pipe: it lives with the supervisor that owns the pipe, not with the trusted verifier)
- :mod:`.forkserver`: the grader's side of a student's zygote
- :mod:`.zygote`: the zygote process (imports the libraries once, forks each grading process)
- :mod:`.lifeline`: every started process dies with its grader
- :mod:`.janitor`: the grader's control groups and scratch folders removed when it is killed (the standard library
  only: it runs by path, a process of its own)
"""
