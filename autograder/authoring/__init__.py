"""``autograder check-course``: the rules the kit relies on, checked for an author in one command."""
