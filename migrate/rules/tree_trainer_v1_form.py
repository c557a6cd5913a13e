"""RTM122: ``XGBoostTrainer``/``LightGBMTrainer`` in V1's ``params=``/``label_column=`` form."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule, keyword

TREE_TRAINERS = frozenset(
    {
        "ray.train.xgboost.XGBoostTrainer", "ray.train.xgboost.xgboost_trainer.XGBoostTrainer",
        "ray.train.lightgbm.LightGBMTrainer", "ray.train.lightgbm.lightgbm_trainer.LightGBMTrainer",
        "compat.xgboost.XGBoostTrainer", "compat.lightgbm.LightGBMTrainer",
    }
)  # fmt: skip
V1_KEYWORDS = ("params", "label_column", "num_boost_round", "dmatrix_params")


class TreeTrainerV1Form(FlagRule):
    """## What it does
    Flags ``XGBoostTrainer(...)`` and ``LightGBMTrainer(...)`` built in V1's form, with
    ``params=``, ``label_column=``, ``num_boost_round=`` or ``dmatrix_params=`` (not with
    ``--target compat``: compat runs that form in both modes).

    ## Why is this bad?
    V2's tree trainers take a training function, as every other V2 trainer; Ray 2.60 raises
    on V1's form when V2 is on.

    ## Example
    ```python
    from ray.train.xgboost import XGBoostTrainer

    trainer = XGBoostTrainer(params={"objective": "reg:squarederror"}, label_column="y", datasets={"train": ds})
    ```

    ## Use instead
    ```python
    from ray.train.xgboost import XGBoostTrainer

    trainer = XGBoostTrainer(train_func, train_loop_config={"label": "y"}, datasets={"train": ds})
    ```

    ## Fix safety
    No fix: the training function (``xgboost.train`` on ``ray.train.get_dataset_shard``, with
    ``RayTrainReportCallback``) is new code.
    """

    code = "RTM122"
    severity = "breaks"
    name = "tree-trainer-v1-form"
    targets = ("ray", "native")
    trigger = re.compile(r"GBMTrainer|XGBoostTrainer")
    summary = "XGBoostTrainer/LightGBMTrainer(params=, label_column=, ...) is V1's form, rejected under V2"
    advice = (
        "Write a training function that calls xgboost.train / lightgbm.train on ray.train.get_dataset_shard(...) "
        "with RayTrainReportCallback, and pass it as the first argument (or keep running it on compat, "
        "which runs V1's form in both modes)."
    )

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        names = index.qualified(node.func) & TREE_TRAINERS
        used = [k for k in V1_KEYWORDS if keyword(node, k) is not None]
        if names and used:
            trainer = sorted(names)[0].rsplit(".", 1)[1]
            return f"`{trainer}({', '.join(k + '=' for k in used)})` is V1's form"
        return None
