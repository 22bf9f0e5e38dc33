"""What ``grade`` hands out beyond the class files: per-student feedback, late work, LMS exports.

- :mod:`.inert`: the rules that keep student text inert in CSV, Markdown and HTML outputs;
- :mod:`.feedback`: ``OUT/<student>/feedback.html``, what a student reads;
- :mod:`.late`: due dates, late policies and submission times;
- :mod:`.lms`: Canvas and Moodle grade import files from a roster.
"""
