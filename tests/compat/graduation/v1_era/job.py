"""The job: a fit and a sweep, and what is read from each."""

import json
import sys

import report
import sweep
import training

storage = sys.argv[1]
result = training.make_trainer(storage, "fit").fit()
observed = {"fit": report.summary(result, f"{storage}/fit.log"), "sweep": report.sweep_summary(sweep.sweep(storage))}
print("OBSERVED " + json.dumps(observed))
