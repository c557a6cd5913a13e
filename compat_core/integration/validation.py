"""Asynchronous checkpoint validation in both of its documented forms.

* Ray 2.60: ``TorchTrainer(validation_config=ValidationConfig(fn))`` and
  ``report(..., validation=True | ValidationTaskConfig(fn_kwargs=...))``; ``fn(checkpoint, **kwargs)``.
* The older documented form: ``report(..., validate_fn=fn, validate_config={...})``;
  ``fn(checkpoint, config)``. Raw Ray 2.60 rejects it; compat carries it through 2.60's
  form: the function and config wait in the run ledger under a token, ``fn_kwargs`` holds
  only the token (V2 stores ``fn_kwargs`` as JSON), and the dispatcher fetches them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, Union

from compat_core import messages
from compat_core.releases.standins import ValidationConfig, ValidationTaskConfig

SEED_TOKEN_KEY = "_compat_validation_token"

ValidationRequest = Union[bool, ValidationTaskConfig]


@dataclass(frozen=True)
class SeedValidation:
    """``report(validate_fn=fn, validate_config=config)``, before it gets a token."""

    fn: Callable[..., Any]
    config: dict[str, Any]


def seed_request(token: str) -> ValidationTaskConfig:
    return ValidationTaskConfig(fn_kwargs={SEED_TOKEN_KEY: token})


class ValidationDispatcher:
    """The ``ValidationConfig.fn`` compat installs: runs whichever form a report asked for."""

    def __init__(self, user_fn: Callable[..., Any] | None, ledger: SeedSource | None = None) -> None:
        self.user_fn = user_fn
        self.ledger = ledger

    def __call__(self, checkpoint: Any, **kwargs: Any) -> dict[str, Any]:
        if SEED_TOKEN_KEY in kwargs:
            assert self.ledger is not None, "a seed validation is stored in the run's ledger"
            seed: SeedValidation = self.ledger.seed_validation(kwargs.pop(SEED_TOKEN_KEY))
            fn = seed.fn
            result = fn(checkpoint, seed.config)
            name = getattr(fn, "__name__", repr(fn))
        else:
            if self.user_fn is None:
                raise ValueError(messages.VALIDATION_WITHOUT_CONFIG)
            result = self.user_fn(checkpoint, **kwargs)
            name = getattr(self.user_fn, "__name__", repr(self.user_fn))
        if not isinstance(result, dict):
            raise TypeError(messages.validation_result_not_dict(name, type(result).__name__))
        return result


def request_from_report(
    validation: ValidationRequest,
    validate_fn: Callable[..., Any] | None,
    validate_config: dict[str, Any] | None,
    *,
    has_checkpoint: bool,
    has_trainer_config: bool,
) -> ValidationRequest | SeedValidation:
    """Check ``report()``'s validation arguments; return Ray 2.60's value or the seed form."""
    if validate_fn is not None:
        if validation:
            raise ValueError(messages.BOTH_VALIDATION_FORMS)
        if not callable(validate_fn):
            raise TypeError(messages.VALIDATE_FN_NOT_CALLABLE.format(got=type(validate_fn).__name__))
        if not has_checkpoint:
            raise ValueError(messages.VALIDATION_NEEDS_CHECKPOINT.format(form="validate_fn=..."))
        return SeedValidation(validate_fn, dict(validate_config or {}))
    if validate_config is not None:
        raise ValueError(messages.VALIDATE_CONFIG_WITHOUT_FN)
    if not isinstance(validation, (bool, ValidationTaskConfig)):
        raise TypeError(
            messages.takes(
                "report(validation=...)", "True/False or a compat.ValidationTaskConfig", type(validation).__name__
            )
        )
    if validation and not has_checkpoint:
        raise ValueError(messages.VALIDATION_NEEDS_CHECKPOINT.format(form="validation=..."))
    if validation and not has_trainer_config:
        raise ValueError(messages.VALIDATION_WITHOUT_CONFIG)
    return validation


class SeedSource(Protocol):
    """Where a validation of the older form finds its function: the run's ledger
    (:class:`compat_core.run.ledger.LedgerClient`; not imported here, as the ledger imports this)."""

    def seed_validation(self, token: str) -> Any: ...


def trainer_config(user: ValidationConfig | None, ledger: SeedSource | None = None) -> ValidationConfig:
    """The trainer-level config compat always installs (a dispatcher around the user's)."""
    if user is None:
        return ValidationConfig(fn=ValidationDispatcher(None, ledger))
    if not isinstance(user, ValidationConfig):
        raise TypeError(messages.takes("validation_config=", "a compat.ValidationConfig", type(user).__name__))
    return ValidationConfig(
        fn=ValidationDispatcher(user.fn, ledger),
        task_config=user.task_config,
        ray_remote_kwargs=dict(user.ray_remote_kwargs),
    )


def kwargs_and_timeout(config: ValidationConfig, request: ValidationRequest) -> tuple[dict[str, Any], float | None]:
    """Ray's rule: per-report ``fn_kwargs`` override the trainer's; so does ``timeout_s``."""
    defaults = dict(config.task_config.fn_kwargs or {})
    if isinstance(request, ValidationTaskConfig):
        return {**defaults, **(request.fn_kwargs or {})}, request.timeout_s
    return defaults, config.task_config.timeout_s
