"""The recorded oracle: the reference's answers stored as plain data (JSON and npz; never code or
pickles) when a release is built, and replayed in its place in the student's repository."""
