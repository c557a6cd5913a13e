import os

import pytest

import compat
from compat_core import installed as version
from compat_core import switch
from compat_core.releases import adapters, facts


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", "v2"),
        ("true", "v2"),
        ("TRUE", "v2"),
        ("0", "v1"),
        ("false", "v1"),
        ("False", "v1"),
    ],
)
def test_parses_like_ray(raw: str | None, expected: str) -> None:
    assert switch.parse(raw).value == expected


@pytest.mark.parametrize("raw", ["yes", "on", " 1", "2", "", "v2"])
def test_values_ray_would_misread_are_rejected_with_the_fix(raw: str) -> None:
    with pytest.raises(compat.InvalidSwitchValueError) as info:
        switch.parse(raw)
    assert "RAY_TRAIN_V2_ENABLED=1" in str(info.value) and "RAY_TRAIN_V2_ENABLED=0" in str(info.value)


def test_backend_follows_the_variable_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "0")
    assert compat.backend() == "v1"
    monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", "1")
    assert compat.backend() == "v2"
    monkeypatch.delenv("RAY_TRAIN_V2_ENABLED")
    assert compat.backend() == ("v2" if facts.V2_IS_DEFAULT else "v1")  # Ray's own default


def test_agrees_with_ray_on_every_accepted_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from ray.train.v2._internal.constants import is_v2_enabled

    for raw in ["1", "true", "TRUE", "0", "false", None]:
        if raw is None:
            monkeypatch.delenv("RAY_TRAIN_V2_ENABLED", raising=False)  # unset: V1 before Ray 2.51
        else:
            monkeypatch.setenv("RAY_TRAIN_V2_ENABLED", raw)
        assert (compat.backend() == "v2") == is_v2_enabled(), raw


def test_ray_older_than_supported_is_a_clear_import_error() -> None:
    assert version.check("2.60.0") == "2.60.0"
    assert version.check("2.44.0") == "2.44.0"
    with pytest.raises(compat.UnsupportedRayError, match=r'pip install "ray\[train\]>=2.44.0"'):
        version.check("2.43.0")


def test_a_newer_ray_warns_and_is_used_not_refused() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert version.check("2.60.3") == "2.60.3"  # a patch release of the tested one: silent
    with pytest.warns(version.UntestedRayWarning, match=r"ray 2.61.0 is newer .*newest: 2.60.0"):
        assert version.check("2.61.0") == "2.61.0"


@pytest.mark.parametrize(
    ("setting", "engine", "has_v1_engine", "mode"),
    [
        ("0", None, True, (switch.V1, switch.V1)),
        ("0", "v2", True, (switch.V1, switch.V2)),
        ("0", None, False, (switch.V1, switch.V2)),  # the day Ray deletes V1's engine
        ("0", "", True, (switch.V1, switch.V1)),  # `export COMPAT_V1_ENGINE=`: empty is unset
        ("0", "", False, (switch.V1, switch.V2)),
        ("1", "v1", True, (switch.V2, switch.V2)),  # V2 semantics run on V2's engine only
        ("true", None, False, (switch.V2, switch.V2)),
    ],
)
def test_the_mode_is_made_from_the_variables_and_the_installed_ray(
    monkeypatch: pytest.MonkeyPatch, setting: str, engine: str | None, has_v1_engine: bool, mode: tuple
) -> None:
    monkeypatch.setenv(switch.ENV_VAR, setting)
    if engine is None:
        monkeypatch.delenv(switch.ENGINE_ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(switch.ENGINE_ENV_VAR, engine)
    monkeypatch.setattr(adapters, "has_v1_engine", lambda: has_v1_engine)
    made = switch.mode()
    assert (made.semantics, made.engine) == mode
    # Exported into a Tune trial's process, the mode is made again the same.
    monkeypatch.setattr(os, "environ", made.export())
    assert switch.mode() == made


def test_what_each_mode_answers() -> None:
    v1, v1_on_v2, v2 = (
        switch.Mode(switch.V1, switch.V1),
        switch.Mode(switch.V1, switch.V2),
        switch.Mode(switch.V2, switch.V2),
    )
    assert [m.backend for m in (v1, v1_on_v2, v2)] == ["v1", "v1", "v2"]
    assert [m.keeps_every_report for m in (v1, v1_on_v2, v2)] == [True, True, False]
    assert [m.warns_v1_only for m in (v1, v1_on_v2, v2)] == [False, False, True]
    assert [m.emulates_v1_engine for m in (v1, v1_on_v2, v2)] == [False, True, False]
    # Ray's own functions answer as the engine that runs: V1's engine with 0, V2's with 1.
    assert [m.engine_env[switch.ENV_VAR] for m in (v1, v1_on_v2, v2)] == ["0", "1", "1"]
