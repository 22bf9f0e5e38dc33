"""The recorded oracle: the reference's answers stored as plain data (JSON and npz; never code or
pickles) when a release is built, and replayed in its place in the student's repository.

- :mod:`.recorded`: the oracles, recording (release) and recorded (replayed)
- :mod:`.files`: a recording's files; :mod:`.misses`: the inputs left unjudged; :mod:`.datasets`: the datasets
  and loaders a recorder keeps
- :mod:`.plain_data`: values as plain data (the encoding both sides share); :mod:`.givens`: fixtures answered
  from what the trusted side recorded
"""
