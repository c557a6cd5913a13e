"""Every seed program in one script, one after another: what the demo hands to `compat compare`.

Run: python examples/seeds.py [--quick]    (or: python -m compat compare -- examples/seeds.py)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run as a file, too

from examples import (  # noqa: E402  (after the path set-up above)
    after_report_callback,
    async_validation,
    config_and_results,
    lightning_report_callback,
    torchmetrics_aggregation,
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer epochs")
    args = parser.parse_args(argv)
    epochs = 2 if args.quick else 4
    storage = tempfile.mkdtemp(prefix="seeds_")
    torchmetrics_aggregation.main(storage, num_epochs=epochs)  # seed 000
    after_report_callback.main(storage)  # seed 000, after_report
    async_validation.main(storage, epochs=min(epochs, 3))  # seed 003
    config_and_results.main(storage)  # seed 004
    lightning_report_callback.main(storage, reporter="ray", epochs=epochs)  # seed 001, as written


if __name__ == "__main__":
    main()
