"""``compat.tensorflow``: Ray's TensorFlow trainer and utilities, for both backends.

Everything in ``ray.train.tensorflow`` under either setting: ``TensorflowTrainer`` runs the
training function on workers set up for ``tf.distribute.MultiWorkerMirroredStrategy`` (Ray's
``TensorflowConfig`` writes each worker's ``TF_CONFIG``), on Ray's V1 engine or V2's, with V1's or
V2's semantics as the switch says. ``compat.tensorflow.keras.ReportCheckpointCallback`` is Ray's
Keras callback: it reports through ``ray.train.report``, which compat's workers see as they see
``compat.report``. Needs TensorFlow (``pip install tensorflow-cpu``), as ``ray.train.tensorflow``
does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ray.train.tensorflow import TensorflowCheckpoint, TensorflowConfig, prepare_dataset_shard

from compat._trainer import DataParallelTrainer, TrainerArguments, ray_trainer_bases
from compat_core.integration.frameworks import TENSORFLOW
from compat_core.releases import standins

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["TensorflowCheckpoint", "TensorflowConfig", "TensorflowTrainer", "prepare_dataset_shard"]


class TensorflowTrainer(DataParallelTrainer, *ray_trainer_bases(TENSORFLOW)):  # type: ignore[misc]
    """Runs ``train_loop_per_worker`` on ``scaling_config.num_workers`` TensorFlow workers
    (``tensorflow_config``: a ``compat.tensorflow.TensorflowConfig``). Everything else as
    :class:`compat.DataParallelTrainer`; a subclass of Ray's ``TensorflowTrainer`` (V2's and V1's)."""

    _framework = TENSORFLOW

    def __init__(
        self,
        train_loop_per_worker: Callable[..., Any],
        *,
        tensorflow_config: Any = None,
        **arguments: Unpack[TrainerArguments],
    ) -> None:
        super().__init__(train_loop_per_worker, backend_config=tensorflow_config, **arguments)

    @property
    def tensorflow_config(self) -> Any:
        return self.backend_config


# Names this (older) Ray's ray.train.tensorflow still exports and newer releases removed (compat/releases.py).
__all__ = standins.export_retired(globals(), "ray.train.tensorflow", __all__)
