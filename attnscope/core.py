"""What every method of attnscope.Model starts from: the loaded model, its ModelInfo, and an input checked and
tokenized in the order the REST routes check theirs (app/deps.py resolve): the request's own rules
(attnscope/checks.py: the route's request model), the pair rule, the layer and head indices against the model, the
token limit, an edit's ranges against the model and the input."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from app.schemas.common import TextRequest
from model.checkpoints import LoadedModel
from model.checkpoints.tokenizer import Encoded
from model.errors import InputError, checked_indices
from model.nets.edit import Edit

from .checks import Indices, validated


@dataclass(frozen=True)
class ModelInfo:
    """What a model is: its `id` ("minilm", or a checkpoint directory's name), `architecture` (config.json's
    model_type: bert, roberta, distilbert, electra, gpt2), `layers` and `heads` (per layer), `max_tokens` (the
    longest input it takes, special tokens included), `causal` (each token sees only itself and the tokens
    before it: GPT-2) and `pairs` (takes a second text, as BERT's [SEP]-joined pairs), and a readable `name`."""

    id: str
    name: str
    architecture: str
    layers: int
    heads: int
    max_tokens: int
    causal: bool
    pairs: bool

    def as_dict(self) -> dict[str, str | int | bool]:
        return {"id": self.id, "name": self.name, "architecture": self.architecture, "layers": self.layers,
                "heads": self.heads, "max_tokens": self.max_tokens, "causal": self.causal, "pairs": self.pairs}


@dataclass(frozen=True)
class Prepared:
    """An input checked as its route checks it: the validated request, its tokens, the chosen layers and heads
    (all when the request has none) and its edit (None without one)."""

    req: Any
    encoded: Encoded
    layers: list[int]
    heads: list[int]
    edit: Edit | None


class Core:
    """The loaded model and the checks every method shares; attnscope.Model adds the analyses."""

    def __init__(self, model: LoadedModel) -> None:
        self._model = model
        spec = model.spec
        cfg = model.cfg
        self.info = ModelInfo(id=spec.id, name=spec.name, architecture=spec.architecture, layers=cfg.n_layers,
                              heads=cfg.n_heads, max_tokens=model.tokenizer.max_tokens, causal=spec.causal,
                              pairs=spec.pairs)

    def __repr__(self) -> str:
        i = self.info
        return f"<attnscope.Model {i.id}: {i.architecture}, {i.layers} layers x {i.heads} heads>"

    @property
    def pretrained(self) -> LoadedModel:
        """The underlying model (model.checkpoints.LoadedModel): its `net`, `tokenizer`, `spec` and `cfg`."""
        return self._model

    def encode(self, text: str, pair: str | None = None) -> Encoded:
        """The input tokenized as the model reads it (ids, segments, tokens).

        Raises FieldError (an InputError, a ValueError) for a text the REST refuses (blank, a lone surrogate;
        FieldTypeError, a TypeError too, for one that is not a str), InputError for a pair sent to a model without
        pairs, TooManyTokens (a ValueError) when the input is over `info.max_tokens`: never truncated."""
        validated(TextRequest, text=text, text_pair=pair)
        self._check_pair(pair)
        return self._tokens(text, pair)

    def _check_pair(self, pair: str | None) -> None:
        if pair is not None and not self.info.pairs:
            raise InputError(("pair",), f"model {self.info.id!r} ({self.info.architecture}) takes one text, "
                                        "not a pair; leave pair out")

    def _tokens(self, text: str, pair: str | None) -> Encoded:
        encoded = self._model.tokenizer.encode(text, pair)
        if not len(encoded):
            raise InputError(("text",), f"the text {text!r} makes no tokens for model {self.info.id!r}; "
                                        "give a text with at least one character")
        return encoded

    def _chosen(self, layers: Sequence[int] | None, heads: Sequence[int] | None) -> tuple[list[int], list[int]]:
        """The layers and heads (None: all) checked as the REST checks them: FieldError for a list that is empty,
        repeats an index or holds a non-int, IndexOutOfRange for an index the model has not (a negative one too)."""
        req = validated(Indices, layers=layers, heads=heads)
        layers, heads = req.layers, req.heads
        return (checked_indices(None if layers is None else list(layers), self.info.layers, "layers"),
                checked_indices(None if heads is None else list(heads), self.info.heads, "heads"))

    def _prepare(self, request: type[BaseModel], **fields: object) -> Prepared:
        """`fields` checked as the route of `request` checks its body (app/deps.py resolve), then tokenized."""
        req: Any = validated(request, **fields)
        self._check_pair(getattr(req, "text_pair", None))
        layers, heads = self._chosen(getattr(req, "layers", None), getattr(req, "heads", None))
        encoded = self._tokens(req.text, getattr(req, "text_pair", None))
        asked = getattr(req, "edit", None)
        edit = None
        if asked is not None:
            edit = asked.to_edit()
            edit.check(self.info.layers, self.info.heads, len(encoded))
        return Prepared(req, encoded, layers, heads, edit)
