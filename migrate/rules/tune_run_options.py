"""RTM108: ``SyncConfig`` and the Tune-only ``RunConfig`` options."""

from __future__ import annotations

import re

from migrate.rules._flags import Rejected, RejectedKeyword

OPTIONS = ("sync_config", "stop", "verbose", "progress_reporter", "log_to_file")


class TuneRunOptions(RejectedKeyword):
    """## What it does
    Flags ``SyncConfig`` and ``RunConfig(sync_config=, stop=, verbose=,
    progress_reporter=, log_to_file=)`` of ``ray.train`` and ``ray.air`` (Tune's own
    ``tune.RunConfig`` and ``tune.SyncConfig`` take them and are not flagged), and, on any
    of them (Tune's too), ``RunConfig(local_dir=)`` and ``SyncConfig(upload_dir=, syncer=)``, and
    ``tune.run(local_dir=, chdir_to_trial_dir=)``.

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
    trigger = re.compile(
        r"SyncConfig|sync_config|stop|verbose|progress_reporter|log_to_file|local_dir|chdir_to_trial_dir"
    )
    summary = "SyncConfig and RunConfig(sync_config/stop/verbose/progress_reporter/log_to_file/local_dir)"
    advice = "Remove it; V2 syncs to storage_path itself. Stop training from inside the training function."

    rejected = (
        Rejected(
            "SyncConfig",
            ("upload_dir", "syncer"),
            "`SyncConfig({given})` was removed (Ray 2.7): give the upload location as `storage_path=`",
        ),
        Rejected("SyncConfig", message="`SyncConfig` is not used by V2", tune_takes_it=True),
        Rejected(
            "RunConfig",
            ("local_dir",),
            "`RunConfig(local_dir=)` is rejected by Ray (V1 and V2): give it as `storage_path=`",
        ),
        Rejected("RunConfig", OPTIONS, tune_takes_it=True),
        # tune.run's own V1-era options, which Ray 2.60 raises DeprecationWarning on (ray/tune/tune.py)
        Rejected(
            "tune.run",
            ("local_dir",),
            "`tune.run(local_dir=...)` raises DeprecationWarning on Ray 2.60: give it as `storage_path=`",
            complete=True,  # Tune's own option: RTM108's advice (V2's syncing, stopping) is not about it
        ),
        Rejected(
            "tune.run",
            ("chdir_to_trial_dir",),
            "`tune.run(chdir_to_trial_dir=...)` raises DeprecationWarning on Ray 2.60: set the "
            "RAY_CHDIR_TO_TRIAL_DIR environment variable instead (0: keep the working directory)",
            complete=True,
        ),
    )
