"""RTM126: ``preprocessor=`` on a trainer (Ray AIR's preprocessors)."""

from __future__ import annotations

import re

from migrate._roles import is_trainer
from migrate.rules._flags import FlagRule, keyword


class TrainerPreprocessor(FlagRule):
    """## What it does
    Flags ``preprocessor=`` passed to a Ray Train trainer.

    ## Why is this bad?
    Trainers stopped taking AIR preprocessors (they were fit on the datasets and saved in
    each checkpoint); V2 trainers reject the argument.

    ## Example
    ```python
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_func, datasets={"train": ds}, preprocessor=scaler)
    ```

    ## Use instead
    ```python
    from ray.train.torch import TorchTrainer

    ds = scaler.fit_transform(ds)  # before the trainer; save the fitted scaler yourself
    trainer = TorchTrainer(train_func, datasets={"train": ds})
    ```

    ## Fix safety
    No fix: the preprocessor moves before ``fit()``, and the code that loaded it from a
    checkpoint (``checkpoint.get_preprocessor()``) must load it from where it is saved.
    """

    code = "RTM126"
    severity = "breaks"
    name = "trainer-preprocessor"
    trigger = re.compile(r"preprocessor")
    summary = "Trainer(preprocessor=...) is rejected by V2"
    advice = (
        "Fit and apply the preprocessor to the datasets before fit() (preprocessor.fit_transform(ds)) and save it "
        "yourself (pickle it into the checkpoint directory or next to the run)."
    )

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        if is_trainer(index.qualified(node.func)) and keyword(node, "preprocessor") is not None:
            return "`preprocessor=` is rejected by V2 trainers"
        return None
