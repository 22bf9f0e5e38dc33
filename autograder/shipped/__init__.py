"""What every shipped environment needs, whoever ships it (``release``, the platforms' bundles, the nbgrader
course): the kit as a wheel (:mod:`.kit_wheel`), the pinned stack and its requirements (:mod:`.stack`), the
course cut to some modules with its hidden checks removed (:mod:`.hidden`), and the references it must carry with
the instructor seed drawn from them (:mod:`.references`). It imports nothing of the wing above it.
"""
