"""A `train.py` that parses the docs' arguments and fits nothing: for commands whose spelling
the docs show (compare's -m form, its console script, its report files), not the comparison
of fits, which tests/compare runs on real fits. compare exits 1 on it, saying no fit() was
made: the docs' blocks that run it say so (``exit: 1``)."""

import argparse

import compat  # noqa: F401

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
print(parser.parse_args())
