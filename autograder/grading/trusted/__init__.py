"""The trusted side: code that never runs next to student code. ``verifier`` runs in the trusted verifier
process (forked by the grader's own zygote, never a student's); ``trusted_server`` and ``trusted_only`` run in
the grader's process.

- :mod:`.verifier`: plans the course's checks and replays claimed passes from their transcripts
- :mod:`.replays`: the stand-ins a replayed check calls, answering from a student's transcript
- :mod:`.trusted_server`: the grader's client of the long-lived verifiers
- :mod:`.trusted_only`: which modules are judged on the trusted side only, and which checks are observed
"""
