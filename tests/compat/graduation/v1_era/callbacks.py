"""What the team's runs record as they report: each report's epoch and loss, one line each, in
a file beside the runs (the trainer's callback)."""

import json

from ray import tune


class EpochLog(tune.Callback):
    def __init__(self, path):
        self.path = path

    def on_trial_result(self, iteration, trials, trial, result, **info):
        with open(self.path, "a") as f:
            f.write(json.dumps({"epoch": result["epoch"], "loss": round(result["loss"], 6)}) + "\n")
