"""What ``grade`` writes into OUT for every run: the class files and each student's.

- :mod:`.class_files`: every file of OUT, written atomically;
- :mod:`.class_report`: ``grades.csv``, ``results.json``, ``summary.md``; :mod:`.html_report`: ``report.html``;
- :mod:`.feedback`: ``OUT/<student>/feedback.html``, what a student reads;
- :mod:`.templates`: the pages' Jinja2 templates (``templates/*.html.j2``), every value auto-escaped;
- :mod:`.inert`: the rules that keep student text inert in CSV, Markdown and HTML outputs;
- :mod:`.run_state`: the record ``--resume`` reads; :mod:`.progress`: the progress line.

The late policy, the roster, the LMS files and the gradebook are the desk's (:mod:`autograder.grading.desk`).
"""
