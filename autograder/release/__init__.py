"""``autograder release OUT``: the student repository, with a recorded oracle instead of ``solutions/``."""
