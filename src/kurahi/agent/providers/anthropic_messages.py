"""Anthropic's Messages API, through the official ``anthropic`` SDK, streamed.

The raw server-sent events are read directly (``message_start``, ``content_block_*``,
``message_delta``): text deltas are passed on as they come, a ``tool_use`` block's
``input_json_delta`` pieces are joined and handed on when the block stops.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

from kurahi.agent.providers.base import Provider
from kurahi.agent.providers.http_errors import endpoint_host, retry_after_seconds
from kurahi.agent.providers.wire import to_anthropic, tools_anthropic
from kurahi.agent.types import Finished, ModelRequest, StreamEvent, TextDelta, ToolCallReady, Usage
from kurahi.errors import ConfigError, ProviderConnectionError, ProviderError, ProviderTimeoutError

__all__ = ["AnthropicProvider", "anthropic_errors"]

_STOP = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "toolUse"}


@contextlib.contextmanager
def anthropic_errors(base_url: str | None = None) -> Iterator[None]:
    """Translate the SDK's exceptions into Kurahi's provider errors."""
    import anthropic

    try:
        yield
    except anthropic.APITimeoutError as exc:
        raise ProviderTimeoutError("the model did not answer in time", provider="anthropic") from exc
    except anthropic.APIStatusError as exc:
        raise ProviderError(
            f"HTTP {exc.status_code}: {exc.message}",
            provider="anthropic",
            status=exc.status_code,
            retry_after=retry_after_seconds(exc.response.headers),
        ) from exc
    except anthropic.APIConnectionError as exc:
        host = endpoint_host(exc, base_url)
        cause = exc.__cause__
        why = f": {type(cause).__name__}" if cause is not None else ""
        raise ProviderConnectionError(f"cannot connect to {host}{why}", provider="anthropic", host=host) from exc
    except anthropic.APIError as exc:
        raise ProviderError(str(exc), provider="anthropic") from exc


class AnthropicProvider(Provider):
    """Messages API with streaming (arguments as for :class:`OpenAIProvider`)."""

    kind = "anthropic"
    api = "anthropic-messages"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        timeout: float = 60.0,
        provider_name: str = "anthropic",
        require_key: bool = False,
    ) -> None:
        from kurahi.extras import require

        require("providers", "a model profile of kind anthropic", ("anthropic",))
        import anthropic

        self.model = model
        self.provider_name = provider_name
        self.base_url = base_url
        key = os.environ.get(api_key_env) if api_key_env else None
        if require_key and not key:
            raise ConfigError(f"the API key variable {api_key_env} is not set", field="apiKeyEnv")
        self._client = anthropic.AsyncAnthropic(
            base_url=base_url, api_key=key or "unset", timeout=timeout, max_retries=0
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one Messages call (see :meth:`Provider.stream`)."""
        kwargs: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": to_anthropic(request.messages),
            "max_tokens": request.max_tokens,
            "stream": True,
        }
        if request.system:
            kwargs["system"] = request.system
        if request.tools:
            kwargs["tools"] = tools_anthropic(request.tools)
        blocks: dict[int, dict[str, str]] = {}
        ready: list[ToolCallReady] = []
        stop = ""
        usage = Usage()
        with anthropic_errors(self.base_url):
            stream = await self._client.messages.create(**kwargs)
            async for event in stream:
                kind = event.type
                if kind == "message_start":
                    u = event.message.usage
                    usage.input = u.input_tokens or 0
                    usage.cache_read = getattr(u, "cache_read_input_tokens", None) or 0
                    usage.cache_write = getattr(u, "cache_creation_input_tokens", None) or 0
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        blocks[event.index] = {"id": block.id, "name": block.name, "json": ""}
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        yield TextDelta(delta.text)
                    elif delta.type == "input_json_delta" and event.index in blocks:
                        blocks[event.index]["json"] += delta.partial_json
                elif kind == "content_block_stop" and event.index in blocks:
                    b = blocks.pop(event.index)
                    ready.append(ToolCallReady(b["id"], b["name"], b["json"] or "{}"))
                elif kind == "message_delta":
                    stop = event.delta.stop_reason or stop
                    if event.usage is not None:
                        usage.output = event.usage.output_tokens or 0
        if not stop:
            raise ProviderError("the stream ended without a stop reason", provider="anthropic")
        for call in ready:
            yield call
        yield Finished("toolUse" if ready else _STOP.get(stop, "stop"), usage)

    async def aclose(self) -> None:
        """Close the SDK's connection pool."""
        await self._client.close()
