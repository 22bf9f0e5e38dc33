"""The untrusted side: what runs inside a grading process, next to the student's code (forked by the student's
zygote, in the student's sandbox). Nothing here is trusted by the grader: what it sends is decoded as hostile.

- :mod:`.child`: runs a module's checks and reports one event per line on the channel
- :mod:`.recorder`: the student's functions wrapped to record what they answer (the transcript the verifier replays)
- :mod:`.output`: what a check prints, discarded and bounded
- :mod:`.handed`: the module's checks handed over compiled, collected from memory
- :mod:`.tamper`: notices a submission that changed the kit's modules while its checks ran
"""
