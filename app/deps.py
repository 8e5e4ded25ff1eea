"""Route dependencies: Annotated aliases for the hub, the settings and a client that left, and the
resolved request that every route running a model starts from.

No `from __future__ import annotations` here: `resolved()` builds each dependency's signature from
the request type it is given, and FastAPI reads those annotations at run time.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Generic, TypeVar, cast

import anyio
from fastapi import Body, Depends, Request

from model.analysis.lens import NoLMHead
from model.checkpoints.loaded import LoadedModel
from model.checkpoints.registry import ModelSpec
from model.checkpoints.tokenizer import Encoded
from model.errors import PairNotSupported, checked_index, checked_indices
from model.nets.edit import Edit

from . import serialize
from .hub import ModelHub
from .schemas.api import AttentionEdit, AttentionRequest, SummaryRequest, TraceRequest
from .schemas.common import TextRequest, TokenInfo, openapi_examples
from .schemas.toy import ToyRequest
from .settings import Settings


# The dependencies are `async def`: they do little work (tokenizing 512 tokens takes under a millisecond), and a
# plain `def` dependency costs a hop through the thread pool each, several per request.
async def _hub(request: Request) -> ModelHub:
    return cast(ModelHub, request.app.state.hub)


async def _settings(request: Request) -> Settings:
    return cast(Settings, request.app.state.settings)


async def _gone(request: Request) -> Callable[[], bool]:
    """Asks the event loop, from a worker thread, whether the client has disconnected."""
    return lambda: anyio.from_thread.run(request.is_disconnected)


Hub = Annotated[ModelHub, Depends(_hub)]
SettingsDep = Annotated[Settings, Depends(_settings)]
ClientLeft = Annotated[Callable[[], bool], Depends(_gone)]

R = TypeVar("R", bound=TextRequest)


@dataclass(frozen=True)
class Resolved(Generic[R]):
    """A text request with its model, its tokens and its checked layer and head indices."""

    req: R
    spec: ModelSpec
    model: LoadedModel
    encoded: Encoded
    layers: list[int]  # /trace: the one traced layer
    heads: list[int]
    edit: Edit | None = None  # /attention, its summary, /edit/effect: checked against the model and the input

    @property
    def tokens(self) -> list[TokenInfo]:
        return serialize.tokens(self.encoded.tokens)


def resolve(hub: ModelHub, req: R) -> Resolved[R]:
    """Model, pair rule, indices, then tokens, in that order; each problem is a domain error (app/errors.py)."""
    spec, model = hub.get(req.model)
    if req.text_pair is not None and not spec.pairs:
        raise PairNotSupported(spec.id)
    cfg = model.cfg
    if isinstance(req, TraceRequest):
        layers = [checked_index(req.layer, cfg.n_layers, "layers", "layer")]
        heads = (list(range(cfg.n_heads)) if req.head is None
                 else [checked_index(req.head, cfg.n_heads, "heads", "head")])
    else:  # the request's layers and heads when it has them; absent or null: all
        layers = checked_indices(getattr(req, "layers", None), cfg.n_layers, "layers")
        heads = checked_indices(getattr(req, "heads", None), cfg.n_heads, "heads")
    encoded = model.tokenizer.encode(req.text, req.text_pair)
    edit = None
    asked = getattr(req, "edit", None)  # /attention, its summary and /edit/effect
    if isinstance(asked, AttentionEdit):
        edit = asked.to_edit()
        edit.check(cfg.n_layers, cfg.n_heads, len(encoded))
    return Resolved(req, spec, model, encoded, layers, heads, edit)


def resolved(kind: type[R]) -> Callable[..., Awaitable[Resolved[R]]]:
    """The dependency that reads a `kind` body (with its documented examples) and resolves it."""

    async def dependency(req: Annotated[kind, Body(openapi_examples=openapi_examples(kind))],  # type: ignore[valid-type]
                         hub: Hub) -> Resolved[R]:
        return resolve(hub, req)

    return dependency


def resolved_with_lm_head(kind: type[R], need: str) -> Callable[..., Awaitable[Resolved[R]]]:
    """As `resolved`, for a route that needs an LM head (`need` names what for): a null model is the first
    model with one; a model without one is refused (422 no_lm_head, naming the models that have one)."""

    async def dependency(req: Annotated[kind, Body(openapi_examples=openapi_examples(kind))],  # type: ignore[valid-type]
                         hub: Hub) -> Resolved[R]:
        text: R = req
        with_head = [mid for mid, model in hub.loaded.items() if model.lm_head]
        if text.model is None and with_head:
            text = text.model_copy(update={"model": with_head[0]})
        spec, model = hub.get(text.model)
        if not model.lm_head:
            raise NoLMHead(spec.id, with_head, need)
        return resolve(hub, text)

    return dependency


AttentionInput = Annotated[Resolved[AttentionRequest], Depends(resolved(AttentionRequest))]
SummaryInput = Annotated[Resolved[SummaryRequest], Depends(resolved(SummaryRequest))]
TraceInput = Annotated[Resolved[TraceRequest], Depends(resolved(TraceRequest))]
ToyInput = Annotated[ToyRequest, Body(openapi_examples=openapi_examples(ToyRequest))]
