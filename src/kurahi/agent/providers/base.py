"""One interface for model providers: a request in, a stream of events out.

A provider is a single async method, :meth:`Provider.stream`, in the way an httpx
transport is a single ``handle_request``: the turn loop knows nothing of wire formats,
and the deterministic provider stands in for every real one in tests.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator

from kurahi.agent.types import ModelRequest, StreamEvent

__all__ = ["Provider"]


class Provider(abc.ABC):
    """A model service behind one method.

    Attributes:
        kind: the provider family (``deterministic``, ``openai``, ``anthropic``).
        api: Pi's ``api`` field for messages it produces.
        provider_name: Pi's ``provider`` field (the profile's provider label).
    """

    kind: str = ""
    api: str = ""
    provider_name: str = ""

    @abc.abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Call the model and stream its reply.

        Usage::

            async for event in provider.stream(request):
                if isinstance(event, TextDelta): ...
                elif isinstance(event, ToolCallReady): ...
                elif isinstance(event, Finished): ...

        The stream yields any number of :class:`TextDelta` and :class:`ToolCallReady`
        events and ends with exactly one :class:`Finished`. Cancelling the consuming task
        aborts the call.

        Raises:
            ProviderTimeoutError: no answer in time.
            ProviderError: any other failure, including a malformed reply.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most providers hold nothing
        """Release connections (the default holds none)."""
