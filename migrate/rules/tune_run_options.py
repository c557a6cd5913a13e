"""RTM108: ``SyncConfig`` and the Tune-only ``RunConfig`` options."""

from __future__ import annotations

import re

from migrate.rules._flags import FlagRule, is_ray_class, keyword

OPTIONS = ("sync_config", "stop", "verbose", "progress_reporter", "log_to_file")


class TuneRunOptions(FlagRule):
    """## What it does
    Flags ``SyncConfig`` and ``RunConfig(sync_config=, stop=, verbose=,
    progress_reporter=, log_to_file=)`` of ``ray.train`` and ``ray.air`` (Tune's own
    ``tune.RunConfig`` and ``tune.SyncConfig`` take them and are not flagged), and, on any
    of them (Tune's too), ``RunConfig(local_dir=)`` and ``SyncConfig(upload_dir=, syncer=)``.

    ## Why is this bad?
    They configure Ray Tune's trial runner, which V2 does not use; V2 raises on them.
    ``local_dir``, ``upload_dir`` and ``syncer`` are older still: Ray 2.60 rejects them in
    both modes (``RunConfig(local_dir=)`` raises a ``DeprecationWarning``); the directory
    or bucket they named is ``RunConfig(storage_path=)``.

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
    severity = "breaks"
    name = "tune-run-options"
    trigger = re.compile(r"SyncConfig|sync_config|stop|verbose|progress_reporter|log_to_file|local_dir")
    summary = "SyncConfig and RunConfig(sync_config/stop/verbose/progress_reporter/log_to_file/local_dir)"
    advice = "Remove it; V2 syncs to storage_path itself. Stop training from inside the training function."

    calls = True

    def check(self, index, item):  # type: ignore[no-untyped-def]
        node = item.node
        qualified = index.qualified(node.func)
        names = {n for n in qualified if not n.startswith("ray.tune.")}  # Tune's own classes take the options
        if is_ray_class(qualified, "SyncConfig"):
            removed = [o for o in ("upload_dir", "syncer") if keyword(node, o) is not None]
            if removed:
                listed = ", ".join(f"{o}=" for o in removed)
                return f"`SyncConfig({listed})` was removed (Ray 2.7): give the upload location as `storage_path=`"
            return "`SyncConfig` is not used by V2" if is_ray_class(names, "SyncConfig") else None
        if not is_ray_class(qualified, "RunConfig"):
            return None
        problems = []
        if keyword(node, "local_dir") is not None:
            problems.append("`RunConfig(local_dir=)` is rejected by Ray (V1 and V2): give it as `storage_path=`")
        used = [o for o in OPTIONS if keyword(node, o) is not None] if is_ray_class(names, "RunConfig") else []
        if used:
            problems.append(f"`RunConfig({', '.join(f'{o}=' for o in used)})` is rejected by V2")
        return "; ".join(problems) or None
