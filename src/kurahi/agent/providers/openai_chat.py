"""Any OpenAI-compatible Chat Completions endpoint, through the official ``openai`` SDK.

OpenAI itself, vLLM, llama.cpp's server and Ollama all speak this protocol; a profile
gives the base URL and the name of the environment variable that holds the API key (the
key itself never sits in config). Replies are streamed; tool-call arguments arrive in
pieces keyed by index and are handed on whole.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

from kurahi.agent.providers.base import Provider
from kurahi.agent.providers.http_errors import endpoint_host, retry_after_seconds
from kurahi.agent.providers.wire import to_openai, tools_openai
from kurahi.agent.types import Finished, ModelRequest, StreamEvent, TextDelta, ToolCallReady, Usage
from kurahi.errors import ConfigError, ProviderConnectionError, ProviderError, ProviderTimeoutError

__all__ = ["OpenAIProvider", "openai_errors"]

_STOP = {"stop": "stop", "length": "length", "tool_calls": "toolUse", "function_call": "toolUse"}


@contextlib.contextmanager
def openai_errors(base_url: str | None = None) -> Iterator[None]:
    """Translate the SDK's exceptions into Kurahi's provider errors (one place, at the edge)."""
    import openai

    try:
        yield
    except openai.APITimeoutError as exc:
        raise ProviderTimeoutError("the model did not answer in time", provider="openai") from exc
    except openai.APIStatusError as exc:
        raise ProviderError(
            f"HTTP {exc.status_code}: {exc.message}",
            provider="openai",
            status=exc.status_code,
            retry_after=retry_after_seconds(exc.response.headers),
        ) from exc
    except openai.APIConnectionError as exc:
        host = endpoint_host(exc, base_url)
        cause = exc.__cause__
        why = f": {type(cause).__name__}" if cause is not None else ""
        raise ProviderConnectionError(f"cannot connect to {host}{why}", provider="openai", host=host) from exc
    except openai.APIError as exc:
        raise ProviderError(str(exc), provider="openai") from exc


class OpenAIProvider(Provider):
    """Chat Completions with streaming.

    Args:
        model: the model id sent to the endpoint.
        base_url: the endpoint (``None``: the SDK's default, api.openai.com).
        api_key_env: environment variable holding the key (a placeholder is used when it is
            unset, for local servers that want none).
        require_key: refuse an unset variable instead (a profile that names one).
        timeout: seconds before a call fails with :class:`ProviderTimeoutError`.
        provider_name: Pi's ``provider`` field in stored messages.
    """

    kind = "openai"
    api = "openai-completions"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        provider_name: str = "openai",
        require_key: bool = False,
    ) -> None:
        from kurahi.extras import require

        require("providers", "a model profile of kind openai", ("openai",))
        import openai

        self.model = model
        self.provider_name = provider_name
        self.base_url = base_url
        key = os.environ.get(api_key_env) if api_key_env else None
        if require_key and not key:
            raise ConfigError(f"the API key variable {api_key_env} is not set", field="apiKeyEnv")
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=key or "unset", timeout=timeout, max_retries=0)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one Chat Completions call (see :meth:`Provider.stream`)."""
        kwargs: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": to_openai(request.system, request.messages),
            "max_tokens": request.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            kwargs["tools"] = tools_openai(request.tools)
        calls: dict[int, dict[str, str]] = {}
        finish = ""
        usage = Usage()
        with openai_errors(self.base_url):
            stream = await self._client.chat.completions.create(**kwargs)
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = Usage(input=chunk.usage.prompt_tokens or 0, output=chunk.usage.completion_tokens or 0)
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta is not None and delta.content:
                        yield TextDelta(delta.content)
                    for tc in (delta.tool_calls if delta is not None else None) or []:
                        slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                        if tc.id:
                            slot["id"] = tc.id
                        if tc.function is not None:
                            slot["name"] += tc.function.name or ""
                            slot["arguments"] += tc.function.arguments or ""
                    if choice.finish_reason:
                        finish = choice.finish_reason
        if not finish:
            raise ProviderError("the stream ended without a finish reason", provider="openai")
        for index in sorted(calls):
            c = calls[index]
            if not c["id"] or not c["name"]:
                raise ProviderError(f"tool call {index} has no id or name", provider="openai")
            yield ToolCallReady(c["id"], c["name"], c["arguments"])
        yield Finished(_STOP.get(finish, "stop") if not calls else "toolUse", usage)

    async def aclose(self) -> None:
        """Close the SDK's connection pool."""
        await self._client.close()
