"""A V1-era job, as Ray 2.7's docs wrote one."""

from ray.air import ScalingConfig, session
from ray.train.torch import TorchTrainer


def train_func(config):
    for epoch in range(config["epochs"]):
        session.report({"loss": 1.0 / (epoch + 1), "epoch": epoch})


def main():
    trainer = TorchTrainer(train_func, train_loop_config={"epochs": 2}, scaling_config=ScalingConfig(num_workers=2))
    return trainer.fit()


if __name__ == "__main__":
    print(main().metrics)
