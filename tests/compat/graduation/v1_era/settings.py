"""The team's shared configuration: how many workers, where runs go, which checkpoints stay."""

from ray.air import CheckpointConfig, RunConfig, ScalingConfig

SCALING = ScalingConfig(num_workers=1)


def run_config(storage, name, callbacks=()):
    return RunConfig(
        name=name,
        storage_path=storage,
        callbacks=list(callbacks),
        checkpoint_config=CheckpointConfig(
            num_to_keep=2, checkpoint_score_attribute="loss", checkpoint_score_order="min"
        ),
    )
