"""``autograder check-course``: the rules the kit relies on, checked for an author in one command; and
``autograder mutate``: how many wrong references the checks catch.

- :mod:`.check`: ``check-course`` itself, the static rules (stubs, checks, hidden checks) and the references' run
- :mod:`.problems`: a problem it reports, with its fix
- :mod:`.contract`: the course's contract (``shared/curriculum.md``) read, and its rule
- :mod:`.coverage`: the pytest plugin recording what the checks vary and compare; :mod:`.coverage_read` reads it
  back, with what a check file compares in its source
- :mod:`.gaps`: an argument never varied, an output never compared, judged against ``[[deliberate_gaps]]``
- :mod:`.mutate`: ``autograder mutate``, its worker processes and timeouts
- :mod:`.mutants`: the mutants, made with cosmic-ray's operators and :mod:`.kit_operators` (the kit's own four)
- :mod:`.mutation_results`: a run's results, the listed survivors, the scores, the run as JSON;
  :mod:`.mutation_report` writes its Markdown report
"""
