"""RTM125: V1's ``DatasetConfig``, which ``DataConfig`` does not replace name for name."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule

DATASET_CONFIG = frozenset({"ray.air.DatasetConfig", "ray.air.config.DatasetConfig", "ray.train.DatasetConfig"})


class DatasetConfigUse(FlagRule):
    """## What it does
    Flags V1's ``DatasetConfig`` (``ray.air.DatasetConfig``), with how its arguments map onto
    ``ray.train.DataConfig``.

    ## Why is this bad?
    The two take different arguments: V1 took a dict of per-dataset ``DatasetConfig(fit=,
    split=, required=, transform=, global_shuffle=, randomize_block_order=,
    max_object_store_memory_fraction=, per_epoch_preprocessor=)``; ``DataConfig`` takes
    ``datasets_to_split=`` and ``execution_options=`` for the whole trainer. A rename would
    not run.

    ## Example
    ```python
    from ray.air import DatasetConfig

    dataset_config = {"train": DatasetConfig(split=True), "valid": DatasetConfig(split=False)}
    ```

    ## Use instead
    ```python
    from ray.train import DataConfig

    dataset_config = DataConfig(datasets_to_split=["train"])
    ```

    ## Fix safety
    No fix: the mapping depends on which options each dataset used.
    """

    code = "RTM125"
    severity = "breaks"
    name = "dataset-config"
    trigger = re.compile(r"DatasetConfig")
    summary = "DatasetConfig is not DataConfig: the arguments differ"
    advice = (
        "Use dataset_config=ray.train.DataConfig(datasets_to_split=[names that had split=True]); "
        "global_shuffle -> ds.random_shuffle(); randomize_block_order -> ds.randomize_block_order(); "
        "fit/transform/per_epoch_preprocessor -> apply them to the dataset before fit(); "
        "max_object_store_memory_fraction -> DataConfig(execution_options=ExecutionOptions(resource_limits=...))."
    )

    refs = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        if index.qualified(item.node) & DATASET_CONFIG:
            return "`DatasetConfig` is not renamed `DataConfig`: the arguments differ"
        return None
