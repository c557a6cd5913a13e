"""What the XGBoost and LightGBM trainers share: the two forms they accept.

V1's form is ``Trainer(params=..., label_column=..., num_boost_round=..., datasets=...)``;
V2 accepts only a training function (Ray 2.60's V2 trainers raise on the V1 form). compat
accepts both under both engines: the V1 form becomes the training function Ray's own V1
trainer builds from it (the same module function, the same report callback and defaults),
which then runs on either engine.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable
from typing import Any

from ray.train import TRAIN_DATASET_KEY

from compat._trainer import TRAINER_KEYWORDS, DataParallelTrainer
from compat_core import messages
from compat_core.config import RunConfig, coerce


def legacy_train_fn(
    kind: str,
    train_fn: Callable[..., Any],
    report_callback: type[Any],
    kwargs_name: str,
    *,
    run_config: Any,
    datasets: dict[str, Any] | None,
    label_column: str | None,
    num_boost_round: int | None,
    train_kwargs: dict[str, Any],
) -> Callable[..., Any]:
    """The training function of V1's form, as Ray's V1 ``{kind}`` builds it."""
    datasets = datasets or {}
    if not datasets.get(TRAIN_DATASET_KEY):
        raise ValueError(messages.tree_missing_train_dataset(kind, sorted(datasets)))
    if not label_column:
        raise ValueError(messages.tree_needs_label_column(kind))
    callbacks = list(train_kwargs.get("callbacks") or [])
    if not any(isinstance(callback, report_callback) for callback in callbacks):
        checkpoint = coerce(RunConfig, run_config, "run_config").checkpoint_config
        # Ray's defaults: no periodic checkpoints, one at the end unless told otherwise.
        callbacks.append(
            report_callback(
                frequency=checkpoint.checkpoint_frequency or 0,
                checkpoint_at_end=checkpoint.checkpoint_at_end is not False,
            )
        )
    return functools.partial(
        train_fn,
        label_column=label_column,
        num_boost_round=num_boost_round or 10,
        dataset_keys=set(datasets),
        **{kwargs_name: {**train_kwargs, "callbacks": callbacks}},
    )


class TreeTrainer(DataParallelTrainer):
    """Base of compat's XGBoost and LightGBM trainers: both forms, both engines."""

    @staticmethod
    def _legacy_parts() -> tuple[Callable[..., Any], type[Any], str]:
        """Ray's V1 per-worker function for the legacy form, its report callback, and the
        name of the function's keyword for the library's ``train()`` arguments."""
        raise NotImplementedError

    def __init__(
        self,
        train_loop_per_worker: Callable[..., Any] | None = None,
        *,
        label_column: str | None = None,
        params: dict[str, Any] | None = None,
        num_boost_round: int | None = None,
        **keywords: Any,
    ) -> None:
        """The keywords of every trainer (:class:`compat._trainer.TrainerArguments`), the
        backend config (``xgboost_config=``/``lightgbm_config=``) and, in the V1 form (no
        training function), ``label_column``, ``params``, ``num_boost_round`` and the
        library's own ``train()`` arguments."""
        arguments: dict[str, Any] = {name: keywords.pop(name) for name in TRAINER_KEYWORDS if name in keywords}
        train_kwargs = keywords
        train_loop_config = arguments.pop("train_loop_config", None)
        run_config, datasets = arguments.get("run_config"), arguments.get("datasets")
        kind = type(self).__name__
        for name in train_kwargs:  # a trainer keyword mistyped, not one of the library's own
            if difflib.get_close_matches(name, TRAINER_KEYWORDS, n=1, cutoff=0.8):
                raise TypeError(messages.unexpected_keyword(kind, name, TRAINER_KEYWORDS))
        # xgboost_config= / lightgbm_config=, by the framework's own name
        config = train_kwargs.pop(self._framework.config_arg, None)
        legacy = train_loop_per_worker is None
        if train_loop_per_worker is None:
            if train_loop_config is not None:
                raise TypeError(messages.tree_loop_config_without_function(kind))
            train_fn, callback, kwargs_name = self._legacy_parts()
            train_loop_per_worker = legacy_train_fn(
                kind,
                train_fn,
                callback,
                kwargs_name,
                run_config=run_config,
                datasets=datasets,
                label_column=label_column,
                num_boost_round=num_boost_round,
                train_kwargs=train_kwargs,
            )
            train_loop_config = dict(params or {})
        else:
            given = [
                name
                for name, value in (
                    ("label_column", label_column),
                    ("params", params),
                    ("num_boost_round", num_boost_round),
                )
                if value is not None
            ]
            if given or train_kwargs:
                names = ", ".join(f"{n}=" for n in given + sorted(train_kwargs))
                raise TypeError(messages.tree_v1_form_with_function(kind, names))
        super().__init__(train_loop_per_worker, backend_config=config, train_loop_config=train_loop_config, **arguments)
        self.legacy_form = legacy
        if legacy:
            self._consumed_options = frozenset({"checkpoint-frequency"})

    @classmethod
    def get_model(cls, checkpoint: Any) -> Any:
        """The booster stored in ``checkpoint`` by the report callback. V1's classmethod, which
        V2 removed (it raises there): under v2 a ``V1OnlyWarning`` ``[tree-get-model]`` (strict
        mode raises, as raw V2 does), and the booster all the same."""
        from compat_core.migration import usage

        usage.relied_on("tree-get-model", f"{cls.__name__}.get_model()")
        if checkpoint is None:
            raise ValueError(messages.tree_get_model_without_checkpoint(cls.__name__))
        return cls._legacy_parts()[1].get_model(checkpoint)
