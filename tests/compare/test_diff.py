"""The pairing and explanation rules of `compat compare`, on hand-made fit records."""

from __future__ import annotations

import copy

import pytest

from compat.compare._diff import compare_runs

pytestmark = pytest.mark.one_pass  # plain code, no Ray: the same in either setting (CI's first pass)


def record(backend: str, free: bool) -> dict:
    rounds = [
        {"attempt": 0, "index": i, "workers": [{"loss": 1.0 / (i + 1)}] * 2, "has_checkpoint": not free,
         "checkpoint_dir_name": f"c{i}" if not free else None,
         "checkpoint_metrics": None if free else {"loss": 1.0 / (i + 1)}, "status": None if free else "COMMITTED"}
        for i in range(2)
    ]  # fmt: skip
    checkpoints = [] if free else [{"dir_name": f"{backend}{i}", "metrics": {"loss": 1.0 / (i + 1)}} for i in range(2)]
    v1 = backend == "v1"
    kept_rows = [{"loss": 1.0}, {"loss": 0.5}]
    return {
        "backend": backend,
        "seconds": 9.0,
        "error": None,
        "metrics": {"loss": 0.5} if v1 or not free else None,
        "metrics_dataframe": {"columns": ["loss"], "rows": kept_rows} if v1 or not free else None,
        "checkpoints": checkpoints,
        "rounds": rounds,
        "worker_reports": [{"loss": 1.0}, {"loss": 1.0}, {"loss": 0.5}, {"loss": 0.5}],
        "v1_usage": [{"kind": "free-floating-report", "count": 2, "first_site": "job.py:3"}] if free else [],
        "run_files": ["progress.csv", "result.json"] if v1 else ["checkpoint_manager_snapshot.json"],
    }


def test_the_documented_v1_v2_differences_are_each_explained() -> None:
    (fit,) = compare_runs([record("v1", True)], [record("v2", True)], rtol=1e-9)
    assert {d.aspect: d.section for d in fit.differences} == {
        "result.metrics": 3,
        "metrics_dataframe rows": 4,
        "metrics_dataframe columns": 4,  # V2 has no frame without checkpoints: not "identical"
        "run directory": 5,
    }
    assert fit.unexplained == []


def test_metrics_dataframe_columns_are_compared_for_real() -> None:
    """V1's extra columns are explained only when they are the keys V1 adds to every report; a
    nested metric (V1: `eval/acc` columns, V2: one `eval` column of dicts) is not."""
    v1, v2 = record("v1", False), record("v2", False)
    v1["metrics_dataframe"]["columns"] = ["loss", "training_iteration", "config/train_loop_config/lr"]
    (fit,) = compare_runs([v1], [v2], rtol=1e-9)
    [columns] = [d for d in fit.differences if d.aspect == "metrics_dataframe columns"]
    assert columns.section == 4 and "adds to every report" in columns.why
    v1["metrics_dataframe"]["columns"] = ["loss", "eval/acc", "training_iteration"]
    v2["metrics_dataframe"]["columns"] = ["loss", "eval"]
    (fit,) = compare_runs([v1], [v2], rtol=1e-9)
    assert [d.aspect for d in fit.unexplained] == ["metrics_dataframe columns"]


def test_a_fit_that_fails_under_both_settings_alike_is_explained_and_differently_is_not() -> None:
    v1, v2 = record("v1", False), record("v2", False)
    # As fit() raised them: compat's error, of Ray's V1 family and of V2's worker-group one.
    v1["error"] = "TrainingFailedError: Training failed: worker 0: RuntimeError: boom (V1's words)"
    v2["error"] = "WorkerGroupFailedError: Training failed: worker 0: RuntimeError: boom (V2's words)"
    (fit,) = compare_runs([v1], [v2], rtol=1e-9)
    [error] = [d for d in fit.differences if d.aspect == "error"]
    assert error.section == 15 and "failed under both settings" in error.why
    v2["error"] = "WorkerGroupFailedError: Training failed: worker 1: KeyError: 'x'"  # another worker, another error
    (fit,) = compare_runs([v1], [v2], rtol=1e-9)
    assert "error" in [d.aspect for d in fit.unexplained]
    v2["error"] = "ValueError: bad input"
    (fit,) = compare_runs([v1], [v2], rtol=1e-9)
    assert "error" in [d.aspect for d in fit.unexplained]
    v2["error"] = None
    (fit,) = compare_runs([v1], [v2], rtol=1e-9)
    assert [d.why for d in fit.unexplained if d.aspect == "error"] == ["the fit failed under one setting only"]


def test_a_difference_in_what_both_modes_share_is_unexplained() -> None:
    v2 = record("v2", False)
    v2["worker_reports"][1] = {"loss": 2.0}
    v2["rounds"][0]["status"] = "VALIDATION_FAILED"
    (fit,) = compare_runs([record("v1", False)], [v2], rtol=1e-9)
    assert {d.aspect for d in fit.unexplained} == {"every worker's reports", "validation status"}
    assert {d.aspect: d.section for d in fit.differences}["checkpoint directories"] == 18


def test_numbers_within_the_tolerance_are_equal() -> None:
    v2 = copy.deepcopy(record("v1", True))
    v2["worker_reports"][0] = {"loss": 1.0 + 1e-7}
    (strict,) = compare_runs([record("v1", True)], [v2], rtol=1e-9)
    (loose,) = compare_runs([record("v1", True)], [v2], rtol=1e-6)
    assert [d.aspect for d in strict.unexplained] == ["every worker's reports"] and loose.differences == []


def test_an_unequal_number_of_fits_is_a_difference() -> None:
    fits = compare_runs([record("v1", True), record("v1", True)], [record("v2", True)], rtol=1e-9)
    assert len(fits) == 2 and [d.aspect for d in fits[1].unexplained] == ["fit"]


def test_the_traceback_tail_ends_at_the_exception_line_even_when_ray_logs_after_it(tmp_path) -> None:
    from compat.compare._run import traceback_tail

    log = tmp_path / "v2.log"
    log.write_text(
        "INFO starting\nTraceback (most recent call last):\n  File 'job.py', line 3, in <module>\n"
        "    result.metrics['loss']\nTypeError: 'NoneType' object is not subscriptable\n\n"
        "(raylet) INFO shutting down\n"
    )
    tail = traceback_tail(log)
    assert tail[0].startswith("Traceback") and tail[-1] == "TypeError: 'NoneType' object is not subscriptable"


def test_the_html_report_needs_matplotlib_only_to_draw_and_says_how_to_get_the_plots(monkeypatch) -> None:
    import sys

    from compat.compare._render import html_report
    from compat.compare._run import ScriptRun

    fits = compare_runs([record("v1", True)], [record("v2", True)], rtol=1e-9)
    runs = {b: ScriptRun(b, 0, f"/tmp/{b}.log", 9.0, fits=[record(b, True)]) for b in ("v1", "v2")}
    drawn = html_report(runs, fits, "verdict", True, "python job.py")
    assert "<figure" in drawn and "No plots" not in drawn
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # not installed
    page = html_report(runs, fits, "verdict", True, "python job.py")
    assert "<figure" not in page and "pip install &quot;ray-train-compat[plot]&quot;" in page
    assert "result.metrics" in page  # the tables are all there


def test_the_html_report_shows_no_terminal_colour_codes(tmp_path) -> None:
    """Ray colours its log prefixes and errors; the page shows their text without the codes."""
    from compat.compare._render import html_report
    from compat.compare._run import ScriptRun

    v2 = record("v2", True)
    v2["error"] = "\x1b[36mray::TrainController\x1b[39m died: WorkerGroupError"
    fits = compare_runs([record("v1", True)], [v2], rtol=1e-9)
    tail = ["Traceback (most recent call last):", "\x1b[31mRuntimeError: boom\x1b[0m"]
    runs = {
        "v1": ScriptRun("v1", 0, "/tmp/v1.log", 9.0, fits=[record("v1", True)]),
        "v2": ScriptRun("v2", 1, "/tmp/v2.log", 9.0, traceback_tail=tail, fits=[v2]),
    }
    page = html_report(runs, fits, "verdict", False, "python job.py")
    assert "ray::TrainController" in page and "RuntimeError: boom" in page
    assert "\x1b" not in page and "[36m" not in page and "u001b" not in page


def test_a_run_that_exited_0_shows_no_traceback(tmp_path) -> None:
    """Ray logs tracebacks it recovered from (a retried worker): only a failed run has one to show."""
    from compat.compare._run import run_script

    script = tmp_path / "job.py"
    script.write_text(
        "import sys, traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    assert run_script("v1", [str(script), "0"], tmp_path / "ok", None).traceback_tail == []
    failed = run_script("v2", [str(script), "3"], tmp_path / "failed", None)
    assert failed.exit_status == 3 and failed.traceback_tail[-1] == "ZeroDivisionError: division by zero"


def _named(record_: dict, index: int) -> dict:
    return {
        **record_,
        "trainer": "TorchTrainer",
        "run_name": f"run_{index}",
        "call_site": f"/somewhere/job.py:{40 + index}",
    }


def test_the_terminal_reads_at_a_glance(capsys, monkeypatch) -> None:
    """A summary of the fits first (each named by its fit() call), then per fit its differences,
    compact, and one line per aspect equal under both; --verbose prints every value."""
    monkeypatch.setenv("COLUMNS", "160")  # a terminal's width (rich folds long cells at 80)
    from compat.compare._render import terminal
    from compat.compare._run import ScriptRun

    v2 = record("v2", False)
    v2["worker_reports"][1] = {"loss": 2.0}  # one row differs: an unexplained difference
    fits = compare_runs(
        [_named(record("v1", True), 0), _named(record("v1", False), 1)],
        [_named(record("v2", True), 0), _named(v2, 1)],
        rtol=1e-9,
    )
    runs = {b: ScriptRun(b, 0, f"/tmp/{b}.log", 9.0) for b in ("v1", "v2")}
    terminal(runs, fits, "the verdict", False)
    out = capsys.readouterr().out
    summary, first, second = out.split("fit 1:")[0], out.split("fit 1:")[1].split("fit 2:")[0], out.split("fit 2:")[1]
    assert "TorchTrainer" in summary and "run_0" in summary and "job.py:40" in summary and "UNEXPLAINED" in summary
    assert 'TorchTrainer "run_0" at /somewhere/job.py:40 (explained)' in first
    # Differences first, then the equal aspects, one line each.
    assert first.index("result.metrics") < first.index("after_report calls: 2 calls, identical")
    assert "every worker's reports: 4 reports, identical" in first
    assert "V1-only usages: 1 usage, identical" in first
    # The differing row of the second fit: which row, not the whole list.
    assert "4 reports; differing:" in second and '[1] {"loss": 2.0}' in second and '[0] {"loss": 1.0}' not in second
    assert len(out.splitlines()) < 70
    terminal(runs, fits, "the verdict", False, verbose=True)
    verbose = capsys.readouterr().out
    assert "identical" not in verbose and '[{"loss": 1.0}, {"loss": 1.0}' in verbose.replace("\n", "")


def test_compact_diffs_name_the_keys_and_rows_that_differ() -> None:
    from compat.compare._render import compact_diff, summarize

    assert compact_diff({"loss": 1.0, "epoch": 2, "lr": 0.1}, {"loss": 1.5, "epoch": 2}) == (
        "{loss: 1.0, lr: 0.1} (+1 equal)",
        "{loss: 1.5, lr: -} (+1 equal)",
    )
    v1, v2 = compact_diff(["a", "b", "c"], ["a", "x"])
    assert v1 == "3 rows; differing:\n[1] b\n[2] c" and v2 == "2 rows; differing:\n[1] x\n[2] -"
    assert compact_diff(3, None) == ("3", "None")
    # a frame's columns by name, not by position: what each side has that the other has not
    v1, v2 = compact_diff(["checkpoint_dir_name", "loss", "mape"], ["loss", "mape", "val"], "metrics_dataframe columns")
    assert v1 == "3 columns; only here: checkpoint_dir_name" and v2 == "3 columns; only here: val"
    assert compact_diff(["loss"], None, "metrics_dataframe columns") == ("1 column; only here: loss", "None")
    assert compact_diff(["a", "b"], None, "checkpoint directories") == ("2 directories", "None")
    assert summarize("checkpoint directories", ["a", "b"]) == "2 directories"
    assert summarize("run directory", ["x"]) == "1 entry"
    assert summarize("result.metrics", {"loss": 1}) == "{loss}"


def test_the_json_names_each_fit_and_lists_the_identical_aspects() -> None:
    from compat.compare._render import as_json
    from compat.compare._run import ScriptRun

    fits = compare_runs([_named(record("v1", True), 0)], [_named(record("v2", True), 0)], rtol=1e-9)
    runs = {b: ScriptRun(b, 0, f"/tmp/{b}.log", 9.0) for b in ("v1", "v2")}
    (fit,) = as_json(runs, fits, "v", True)["fits"]
    assert fit["title"] == 'fit 1: TorchTrainer "run_0" at /somewhere/job.py:40'
    assert (fit["trainer"], fit["run_name"], fit["call_site"], fit["verdict"]) == (
        "TorchTrainer", "run_0", "/somewhere/job.py:40", "explained"
    )  # fmt: skip
    assert "after_report calls" in fit["identical"] and "result.metrics" not in fit["identical"]
    assert {d["aspect"] for d in fit["differences"]} == {
        "result.metrics",
        "metrics_dataframe rows",
        "metrics_dataframe columns",
        "run directory",
    }


def test_a_rerun_of_a_named_run_is_explained_by_v2_resuming_it() -> None:
    """The second compare of a script with a fixed RunConfig(name, storage_path): V2 resumes the
    stored run (its two checkpoints, then this run's), V1 starts afresh: §17, not unexplained."""
    v1, v2 = record("v1", False), record("v2", False)
    rerun = [{"kind": "rerun-same-name", "count": 1, "first_site": "job.py:14"}]
    v1["v1_usage"], v2["v1_usage"] = copy.deepcopy(rerun), copy.deepcopy(rerun)
    v2["checkpoints"] = [{"dir_name": f"old{i}", "metrics": {"loss": 9.0 + i}} for i in range(2)] + v2["checkpoints"]
    v2["metrics_dataframe"]["rows"] = [{"loss": 9.0}, {"loss": 10.0}, {"loss": 1.0}, {"loss": 0.5}]
    (fit,) = compare_runs([v1], [v2], rtol=1e-9)
    [count] = [d for d in fit.differences if d.aspect == "checkpoints (count)"]
    assert count.section == 17 and "V2 resumed it" in count.why
    assert fit.unexplained == []
    v1["v1_usage"] = []  # only one run says so: the difference is not this one
    (fit,) = compare_runs([v1], [v2], rtol=1e-9)
    assert "checkpoints (count)" in [d.aspect for d in fit.unexplained]


def test_an_unnamed_run_config_reused_is_a_rerun_under_v2_only_and_explained() -> None:
    """``run = RunConfig(storage_path=...)`` given to two trainers: V2 named it when it was made
    (as Ray's), so the second fit reruns that name (rerun-same-name, v2 only); V1 names each fit
    after its trainer. Explained by §17 only when the program gave no name."""
    v1, v2 = record("v1", False), record("v2", False)
    v1["run_name"] = v2["run_name"] = None
    v2["v1_usage"] = [{"kind": "rerun-same-name", "count": 1, "first_site": "job.py:14"}]
    (fit,) = compare_runs([v1], [v2], rtol=1e-9)
    [usages] = [d for d in fit.differences if d.aspect == "V1-only usages"]
    assert usages.section == 17 and "named then, as Ray's" in usages.why and fit.unexplained == []
    v1["run_name"] = v2["run_name"] = "named"  # a given name reruns under V1 too: not this
    (fit,) = compare_runs([v1], [v2], rtol=1e-9)
    assert "V1-only usages" in [d.aspect for d in fit.unexplained]


def trial(backend: str, lr: float, started_at: float, rounds: int) -> dict:
    """A Tune trial's fit record: ``rounds`` checkpointed rounds, started at ``started_at``."""
    fit = record(backend, False)
    fit["rounds"] = [dict(fit["rounds"][0], index=i, workers=[{"loss": lr * i}] * 2) for i in range(rounds)]
    fit["worker_reports"] = [{"loss": lr * i} for i in range(rounds) for _ in range(2)]
    fit.update(trial={"experiment": "sweep", "config": {"train_loop_config": {"lr": lr}}}, started_at=started_at)
    fit["seconds"] = 10.0
    return fit


def test_a_sweeps_trials_are_paired_by_their_sample_and_its_concurrency_explains_their_lengths() -> None:
    """V1 ran the trials one after the other (each reserved the cluster's CPUs), V2 all at once:
    ASHA stopped another trial early. Trials are paired by sample, not by the order they ran."""
    v1 = [trial("v1", 0.1, 100.0, 4), trial("v1", 0.2, 110.0, 2)]  # back to back: one at a time
    v2 = [trial("v2", 0.2, 100.0, 4), trial("v2", 0.1, 100.5, 4)]  # overlapping, the other one first
    for fit in v2:
        fit["metrics"], fit["metrics_dataframe"] = None, None  # the trial's fit() Result: no checkpoint
    plain = record("v1", False), record("v2", False)
    fits = compare_runs([plain[0], *v1], [plain[1], *v2], rtol=1e-9)
    assert [f.index for f in fits] == [0, 1, 2, 3]
    sweep, first, second = fits[1:]
    assert {d.aspect: (d.v1, d.v2, d.section) for d in sweep.differences} == {
        "most trials at once": (1, 2, 24),
        "trial lengths (rounds of each trial, paired)": ([4, 2], [4, 4], 24),
    }
    assert "max_concurrent_trials" in sweep.differences[0].why
    assert first.v1["trial"]["config"] == first.v2["trial"]["config"] == {"train_loop_config": {"lr": 0.1}}
    # What the program reads of a trial is Tune's results (its rounds), not the fit's Result:
    # V2's metrics (None without a checkpoint), frame and directory are no difference.
    assert {d.aspect for d in first.differences} == {"checkpoint directories"}  # §18
    assert (
        "read by the program",
        "Tune's results: every round (above)",
        "Tune's results: every round (above)",
    ) in first.rows
    # The lr=0.2 trial stopped after 2 rounds under V1: its first 2 rounds under V2, so what
    # differs because of its length is explained by the sweep's concurrency.
    assert second.unexplained == [] and {d.section for d in second.differences} == {18, 24}
    assert any(d.aspect == "after_report calls" and d.section == 24 for d in second.differences)
    from compat.compare._render import fit_title

    assert fit_title(sweep) == 'sweep 2: Tuner "sweep"'
    assert fit_title(first) == 'fit 3: trial {"train_loop_config": {"lr": 0.1}} of "sweep"'


def test_a_trial_that_differs_in_more_than_its_length_is_unexplained() -> None:
    v1 = [trial("v1", 0.1, 100.0, 2), trial("v1", 0.2, 110.0, 2)]
    v2 = [trial("v2", 0.1, 100.0, 4), trial("v2", 0.2, 100.5, 4)]
    v2[0]["rounds"][0]["workers"] = [{"loss": 9.0}] * 2  # not V1's first rounds
    sweep, first, second = compare_runs(v1, v2, rtol=1e-9)
    assert any(d.aspect == "after_report calls" for d in first.unexplained)
    assert second.unexplained == []
    # The same concurrency and other lengths: nothing explains them.
    v2 = [trial("v2", 0.1, 100.0, 4), trial("v2", 0.2, 110.0, 4)]
    sweep, first, second = compare_runs(v1, v2, rtol=1e-9)
    assert [d.aspect for d in sweep.unexplained] == ["trial lengths (rounds of each trial, paired)"]
    assert any(d.aspect == "after_report calls" for d in second.unexplained)


def test_trials_whose_samples_differ_are_paired_in_the_order_they_started() -> None:
    """An unseeded random search draws other samples in each run."""
    v1 = [trial("v1", 0.3, 110.0, 2), trial("v1", 0.1, 100.0, 2)]
    v2 = [trial("v2", 0.4, 100.0, 2)]
    sweep, first, second = compare_runs(v1, v2, rtol=1e-9)
    assert [d.aspect for d in sweep.unexplained] == ["trials"]
    assert first.v1["trial"]["config"]["train_loop_config"]["lr"] == 0.1 and first.v2 is not None
    assert second.v1["trial"]["config"]["train_loop_config"]["lr"] == 0.3 and second.v2 is None


def test_the_tables_written_to_a_file_are_not_cut_at_80_columns(capsys, monkeypatch) -> None:
    """rich cuts a console that is not a terminal at 80 columns: a file gets full lines."""
    monkeypatch.delenv("COLUMNS", raising=False)
    from compat.compare._render import FILE_WIDTH, terminal
    from compat.compare._run import ScriptRun

    v2 = record("v2", False)
    v2["worker_reports"][1] = {"loss": 2.0}
    fits = compare_runs([_named(record("v1", False), 0)], [_named(v2, 0)], rtol=1e-9)
    runs = {b: ScriptRun(b, 0, f"/tmp/{b}.log", 9.0) for b in ("v1", "v2")}
    terminal(runs, fits, "the verdict", False)  # captured: stdout is not a terminal
    widths = [len(line) for line in capsys.readouterr().out.splitlines()]
    assert max(widths) > 80 and max(widths) <= FILE_WIDTH


def _retried(backend: str, dying_reports: int) -> dict:
    """A 2-worker run whose first attempt failed after ``dying_reports`` reports of rank 1 (rank 0
    reported 2), then a second attempt of 2 rounds: every report, as compat records it."""
    fit = record(backend, False)
    reports = [{"loss": 1.0, "attempt": 0, "world_rank": 0, "report_index": i} for i in range(2)]
    reports += [{"loss": 1.0, "attempt": 0, "world_rank": 1, "report_index": i} for i in range(dying_reports)]
    reports += [{"loss": 0.5, "attempt": 1, "world_rank": r, "report_index": i} for r in range(2) for i in range(2)]
    fit["worker_reports"] = reports
    fit["rounds"] = [dict(r, attempt=a) for a in range(2) for r in fit["rounds"]][: 2 + dying_reports]
    return fit


def test_a_dying_attempts_last_report_that_arrives_under_one_setting_only_is_timing() -> None:
    """FailureConfig(max_failures=1), a rank raising once: whether its last report lands before it
    dies is a race. compare explains it (§21), naming the attempt and rank, and exits 0."""
    (fit,) = compare_runs([_retried("v1", 2)], [_retried("v2", 1)], rtol=1e-9)
    [reports] = [d for d in fit.differences if d.aspect == "every worker's reports"]
    assert reports.section == 21 and "attempt 0 rank 1: 1 report more under V1" in reports.why
    assert fit.unexplained == []
    # the same count but other values in a failed attempt, or any difference in the last one: not timing
    other = _retried("v2", 2)
    other["worker_reports"][2]["loss"] = 9.0
    (fit,) = compare_runs([_retried("v1", 2)], [other], rtol=1e-9)
    assert "every worker's reports" in [d.aspect for d in fit.unexplained]
    last = _retried("v2", 2)
    last["worker_reports"].pop()
    (fit,) = compare_runs([_retried("v1", 2)], [last], rtol=1e-9)
    assert "every worker's reports" in [d.aspect for d in fit.unexplained]


def test_a_trial_tune_stopped_before_its_fit_returned_is_named_not_compared() -> None:
    """ASHA ends a trial at a report, then its process: the trial's record is the one written when
    its fit started. Such a pair is "not compared" (not "identical"), the sweep counts them."""
    from compat.compare import _verdict
    from compat.compare._render import _fit_verdict
    from compat.compare._run import ScriptRun

    stopped = [trial("v1", 0.1, 100.0, 0), trial("v2", 0.1, 100.0, 0)]
    for fit in stopped:
        fit.update(unfinished=True, seconds=None)
    done = trial("v1", 0.2, 101.0, 2), trial("v2", 0.2, 101.0, 2)
    fits = compare_runs([stopped[0], done[0]], [stopped[1], done[1]], rtol=1e-9)
    sweep, first, second = fits
    assert ("trials stopped before their fit() returned", 1, 1) in sweep.rows
    assert first.not_compared.startswith("Tune stopped the trial before its fit() returned under V1 and V2")
    assert _fit_verdict(first) == ("not compared", "dim") and first.differences == []
    assert _fit_verdict(second)[0] != "not compared"
    runs = {b: ScriptRun(b, 0, f"/tmp/{b}.log", 9.0) for b in ("v1", "v2")}
    text, ok = _verdict(runs, fits)
    assert ok and text.endswith("; 1 Tune trial(s) not compared (stopped before their fit() returned).")
    assert text.startswith("2 fit(s) compared")
