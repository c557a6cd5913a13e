"""tests/docs/stand_ins holds the files the docs' commands expect (a `train.py`, a `src/` tree):
they are run by tests/test_docs.py, not collected here."""

collect_ignore_glob = ["stand_ins/*"]
