"""``pytest exercises/``: :mod:`.hooks` (the plugin), :mod:`.session` (one run's state and settings),
:mod:`.profiles` (hypothesis profiles), :mod:`.report` (student messages and the score table),
:mod:`.parallel` (several modules side by side), :mod:`.compile_time`, :mod:`.garbage`."""
