"""The instructor's desk: what ``grade`` does with a class's scores beyond grading them, in the grader's process.

- :mod:`.record`: the desk's options (:class:`~.record.Desk`) and what OUT's record keeps of them, reused by
  ``--student`` and ``--resume``;
- :mod:`.late`: due dates, late policies and submission times;
- :mod:`.lms`: the roster, and Canvas and Moodle grade import files from it;
- :mod:`.exports`: the late policy judged over a class, the roster checked before grading, the LMS files made
  after it;
- :mod:`.gradebook`: the nbgrader gradebook (``grade --gradebook``).

The files ``grade`` writes for every run are :mod:`autograder.grading.outputs`' (which read a student's
:class:`~.late.Lateness`); nothing here prints or exits: :mod:`autograder.grading.command` says what happened.
"""
