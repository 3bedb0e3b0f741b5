"""Model profiles and per-agent settings, read from ``<home>/config.json``.

Loose input, strict state: the file is decoded once into typed structs with defaults, and
every unknown or mistyped field is an error that names the field, as is a limit out of its
range (``maxSteps: 0``, a negative cap or timeout), which would break every later turn. Profiles ``alpha`` and
``beta`` (both deterministic) always exist unless the file redefines them. A config file is
at most :data:`MAX_CONFIG_BYTES`, and ``apiKeyEnv`` may not name one of Kurahi's own
variables (``KOLO_GATEWAY_TOKEN`` would send the owner token to whatever ``baseUrl`` says).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from kurahi.errors import ConfigError, UnsafeFileError
from kurahi.fs.os_errors import os_error
from kurahi.fs.safe import read_regular
from kurahi.js.decode import DECODE_ERRORS
from kurahi.lifecycle.freshness.policy import FreshnessConfig

__all__ = [
    "MAX_CONFIG_BYTES",
    "AgentSettings",
    "Backoff",
    "CompactionSettings",
    "Config",
    "ModelProfile",
    "QueueSettings",
    "ToolPolicy",
    "check_api_keys",
    "load_config",
]

MAX_CONFIG_BYTES = 1024 * 1024
"""Largest ``config.json`` read or written."""

QueueMode = Literal["steer", "followup", "collect", "interrupt"]
DropPolicy = Literal["reject", "drop-oldest"]
PairingPolicy = Literal["synthesize", "refuse"]


class Backoff(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """How long to wait before retrying a failed model call: exponential, with full jitter.

    Attempt ``n`` (from 1) waits a random time up to ``min(maxMs, initialMs * multiplier**(n-1))``,
    and never less than a ``Retry-After`` the provider sent.
    """

    initial_ms: Annotated[int, msgspec.Meta(ge=0)] = 500
    """Ceiling of the first wait."""
    max_ms: Annotated[int, msgspec.Meta(ge=0)] = 20_000
    """Ceiling of any computed wait (a longer ``Retry-After`` fails the call instead, see ``maxRetryAfterMs``)."""
    multiplier: Annotated[float, msgspec.Meta(ge=1)] = 2.0
    """Growth of the ceiling from one attempt to the next."""
    max_retry_after_ms: Annotated[int, msgspec.Meta(ge=0)] = 60_000
    """Longest ``Retry-After`` honoured; a provider asking for more fails the turn at once, saying so."""

    def __post_init__(self) -> None:
        if not 0 <= self.initial_ms <= 600_000 or not 0 <= self.max_ms <= 600_000:
            raise ValueError("backoff initialMs and maxMs must be between 0 and 600000")
        if not 1.0 <= self.multiplier <= 10.0:
            raise ValueError("backoff multiplier must be between 1 and 10")
        if not 0 <= self.max_retry_after_ms <= 3_600_000:
            raise ValueError("backoff maxRetryAfterMs must be between 0 and 3600000")


class ModelProfile(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """A model a resident can run on."""

    provider: Literal["deterministic", "openai", "anthropic"] = "deterministic"
    """Which provider speaks to it."""
    model: str = ""
    """The provider's model id (deterministic: defaults to the profile name)."""
    base_url: str | None = None
    """Endpoint for ``openai``/``anthropic`` (an OpenAI-compatible server, say)."""
    api_key_env: str | None = None
    """Environment variable that holds the API key; the key is never stored in config."""
    timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 60.0
    """Seconds before a model call fails as timed out."""
    delay_ms: Annotated[int, msgspec.Meta(ge=0)] = 0
    """Deterministic only: how long each call takes."""
    context_window: Annotated[int, msgspec.Meta(ge=1)] = 128_000
    """The model's context window, in tokens."""
    max_tokens: Annotated[int, msgspec.Meta(ge=1)] = 4096
    """Upper bound on a reply."""
    max_retries: Annotated[int, msgspec.Meta(ge=0)] = 2
    """Retries of a model call that failed with 429, a 5xx or a connection error before any of
    its reply arrived (0: none). A call that fails after them fails the turn, recorded."""
    backoff: Backoff = msgspec.field(default_factory=Backoff)
    """Waits between those retries."""

    def __post_init__(self) -> None:
        if self.api_key_env is not None and self.api_key_env.upper().startswith("KOLO_"):
            raise ValueError(f"apiKeyEnv {self.api_key_env!r} names one of Kurahi's own variables, never an API key")
        if not 0 <= self.max_retries <= 20:
            raise ValueError(f"maxRetries must be between 0 and 20; got {self.max_retries}")


class ToolPolicy(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Which tools an agent may use: allowed by ``allow`` (``*``: all) and not by ``deny``."""

    allow: list[str] = msgspec.field(default_factory=lambda: ["*"])
    deny: list[str] = msgspec.field(default_factory=list)

    def permits(self, name: str) -> bool:
        """Whether the tool ``name`` may run."""
        return ("*" in self.allow or name in self.allow) and name not in self.deny and "*" not in self.deny


class QueueSettings(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """How messages that arrive while a session is busy are handled."""

    mode: QueueMode = "followup"
    """Default mode for messages that do not name one."""
    cap: Annotated[int, msgspec.Meta(ge=1)] = 20
    """Most messages waiting per session."""
    drop: DropPolicy = "reject"
    """At the cap: refuse the new message, or drop the oldest waiting one."""
    debounce_ms: Annotated[int, msgspec.Meta(ge=0)] = 300
    """``collect``: quiet time before the batch runs."""


class CompactionSettings(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """When and how much to compact (Pi's defaults)."""

    enabled: bool = True
    reserve_tokens: Annotated[int, msgspec.Meta(ge=0)] = 16384
    keep_recent_tokens: Annotated[int, msgspec.Meta(ge=0)] = 20000


class AgentSettings(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True):
    """One agent's role in the runtime."""

    model: str = "alpha"
    """Name of its model profile."""
    tools: ToolPolicy = msgspec.field(default_factory=ToolPolicy)
    pairing: PairingPolicy = "synthesize"
    """An unsettled tool call: append an explicit unknown-outcome result, or refuse to go on."""
    queue: QueueSettings = msgspec.field(default_factory=QueueSettings)
    compaction: CompactionSettings = msgspec.field(default_factory=CompactionSettings)
    fsync: Literal["always", "turn", "never"] = "turn"
    """Transcript durability (see :class:`kurahi.fs.FsyncPolicy`)."""
    max_message_bytes: Annotated[int, msgspec.Meta(ge=1)] = 256 * 1024
    """Largest user message accepted."""
    max_steps: Annotated[int, msgspec.Meta(ge=1)] = 32
    """Most model calls in one turn (a loop guard)."""
    lifecycle: FreshnessConfig = msgspec.field(default_factory=FreshnessConfig)
    """When sessions expire, the rollover guard, and what a rollover carries."""


def _default_models() -> dict[str, ModelProfile]:
    return {"alpha": ModelProfile(model="alpha"), "beta": ModelProfile(model="beta")}


class Config(msgspec.Struct, forbid_unknown_fields=True):
    """The whole config file."""

    models: dict[str, ModelProfile] = msgspec.field(default_factory=_default_models)
    defaults: dict[str, Any] = msgspec.field(default_factory=dict)
    """Settings every agent starts from (same fields as an agent)."""
    agents: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    """Per-agent overrides of ``defaults``."""

    def agent(self, agent_id: str) -> AgentSettings:
        """The merged settings of one agent (defaults, then its own overrides).

        Raises:
            ConfigError: a field that is unknown or of the wrong type.
        """
        merged = _merge(self.defaults, self.agents.get(agent_id, {}))
        try:
            settings = msgspec.convert(merged, AgentSettings)
        except msgspec.ValidationError as exc:
            raise ConfigError(str(exc), field=f"agents.{agent_id}") from exc
        if settings.model not in self.models:
            raise ConfigError(f"unknown model profile {settings.model!r}", field=f"agents.{agent_id}.model")
        return settings

    def check_agents(self, agent_ids: Iterable[str] = ()) -> None:
        """Check that ``defaults`` alone, every agent the file configures and ``agent_ids`` all resolve.

        Raises:
            ConfigError: the first field that is unknown, mistyped or out of range (named).
        """
        try:
            msgspec.convert(self.defaults, AgentSettings)
        except msgspec.ValidationError as exc:
            raise ConfigError(str(exc), field="defaults") from exc
        for agent_id in sorted({*self.agents, *agent_ids}):
            self.agent(agent_id)

    def profile(self, name: str) -> ModelProfile:
        """A model profile by name.

        Raises:
            ConfigError: no such profile.
        """
        try:
            return self.models[name]
        except KeyError:
            raise ConfigError(f"unknown model profile {name!r}; known: {', '.join(sorted(self.models))}") from None


def check_api_keys(config: Config, environ: Mapping[str, str] | None = None) -> None:
    """Refuse a profile whose ``apiKeyEnv`` names a variable that is not set (or is empty).

    Checked when a gateway starts and when a config is applied, so that the mistake is named
    there, once, instead of every turn going out as an unauthenticated request. Profiles that
    name no variable are left alone (local servers that want no key).

    Raises:
        ConfigError: the first such profile, naming the variable (never a value).
    """
    env = os.environ if environ is None else environ
    for name in sorted(config.models):
        var = config.models[name].api_key_env
        if var is not None and not env.get(var):
            raise ConfigError(
                f"the API key variable {var} is not set in the gateway's environment "
                f"(set it before starting the gateway, or change the profile)",
                field=f"models.{name}.apiKeyEnv",
            )


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def read_config_bytes(path: Path) -> bytes | None:
    """The bytes of ``config.json`` (at most one more than the limit); ``None`` when there is none.

    Raises:
        ConfigError: a symlink (never followed out of the home), a directory, or unreadable.
    """
    try:
        return read_regular(path, what="the config", limit=MAX_CONFIG_BYTES)
    except UnsafeFileError as exc:
        raise ConfigError(exc.detail, path=path) from None
    except OSError as exc:
        raise os_error(ConfigError, "cannot read", exc, path=path) from exc


def load_config(home: str | os.PathLike[str]) -> Config:
    """Read ``<home>/config.json`` (a missing file gives the defaults).

    Raises:
        ConfigError: the file does not parse, is too large, a symlink or a directory, or a field
            is unknown, mistyped or out of range.
    """
    path = Path(home) / "config.json"
    raw = read_config_bytes(path)
    if raw is None:
        return Config()
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"larger than {MAX_CONFIG_BYTES} bytes; refused", path=path)
    try:
        config = msgspec.json.decode(raw, type=Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(str(exc), path=path) from exc
    except DECODE_ERRORS as exc:
        raise ConfigError(f"not valid JSON: {exc}", path=path) from exc
    models = _default_models()
    models.update(config.models)
    config.models = models
    return config
