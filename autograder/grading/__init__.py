"""``autograder grade``: a class of submissions, each in a limited process, every claimed pass
confirmed by a trusted verifier that never runs student code."""
