"""Where classes are graded besides `autograder grade`: bundles and runners for grading platforms."""
