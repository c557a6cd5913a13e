"""RTM108: ``SyncConfig`` and the Tune-only ``RunConfig`` options."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule, is_ray_class, keyword

OPTIONS = ("sync_config", "stop", "verbose", "progress_reporter", "log_to_file")


class TuneRunOptions(FlagRule):
    """## What it does
    Flags ``SyncConfig`` and ``RunConfig(sync_config=, stop=, verbose=,
    progress_reporter=, log_to_file=)`` of ``ray.train`` and ``ray.air`` (Tune's own
    ``tune.RunConfig`` and ``tune.SyncConfig`` take them and are not flagged).

    ## Why is this bad?
    They configure Ray Tune's trial runner, which V2 does not use; V2 raises on them.

    ## Example
    ```python
    from ray.train import RunConfig

    run_config = RunConfig(name="exp", verbose=0, stop={"training_iteration": 10})
    ```

    ## Use instead
    ```python
    from ray.train import RunConfig

    run_config = RunConfig(name="exp")  # stop inside the training loop
    ```

    ## Fix safety
    No fix: ``stop`` must move into the training function.
    """

    code = "RTM108"
    name = "tune-run-options"
    trigger = re.compile(r"SyncConfig|sync_config|stop|verbose|progress_reporter|log_to_file")
    summary = "SyncConfig and RunConfig(sync_config/stop/verbose/progress_reporter/log_to_file)"
    advice = "Remove it; V2 syncs to storage_path itself. Stop training from inside the training function."

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        names = {n for n in index.qualified(node.func) if not n.startswith("ray.tune.")}  # Tune takes them
        if is_ray_class(names, "SyncConfig"):
            return "`SyncConfig` is not used by V2"
        if is_ray_class(names, "RunConfig"):
            used = [o for o in OPTIONS if keyword(node, o) is not None]
            if used:
                return f"`RunConfig({', '.join(f'{o}=' for o in used)})` is rejected by V2"
        return None
