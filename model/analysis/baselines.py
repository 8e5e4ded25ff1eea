"""Integrated gradients' baselines: the word embeddings b (1, T, E) the path starts from, one row per input token.

* "mean" (the default): the mean of the word embedding table's rows (the vocabulary's, 0 .. vocab_size − 1) at
  every position. It is an uninformative point (no token's own row) that is not zero: RMSNorm divides by the
  root mean square of its input, so at a zero word embedding (a Llama-family model, which adds no position
  embedding) the first norm is singular, the network's output there is an artefact of the norm's ε, and the path
  from it crosses a region where the gradient changes by orders of magnitude within a few nodes. Completeness's
  relative gap measured at 128 Gauss–Legendre nodes (attribution.py's DEFAULT_STEPS) on a 13-token MiniLM input,
  the test GPT-2 and the six Llama-family test checkpoints (tests/checkpoints.py): from the mean 2e-9, 5e-6 and
  at most 1.1e-3; from zeros 4e-8, 2e-6 and 2.3 % to 198 % (over 5 % on five of six, and still on four at 512).
* "pad": the tokenizer's padding token's row ([PAD], <pad>) at every position; refused when it has none. In
  Llama-family checkpoints that row is often all zeros (the padding index is trained to nothing), the same
  singular point as "zeros".
* "mask": the mask token's row ([MASK], <mask>); refused when the tokenizer has none.
* "zeros": a zero word embedding.
* {"text": ...}: the word embeddings of a second text that makes as many tokens as the input (its template tokens
  included, so [CLS] and [SEP] meet their own rows), refused otherwise.

Position and token-type embeddings are not part of b: the network adds them at every point of the path as it does
at the input (attribution.py embed_words).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded, TooManyTokens
from model.errors import InputError

KINDS = ("mean", "pad", "mask", "zeros")  # "text" besides, as {"text": ...}
DEFAULT = "mean"
PAD_TOKENS = ("[PAD]", "<pad>", "<|pad|>", "<PAD>")
MASK_TOKENS = ("[MASK]", "<mask>", "<|mask|>", "<MASK>")

BaselineRequest = str | Mapping[str, str]  # a kind of KINDS, or {"text": a text of the input's token count}


class BaselineError(InputError):
    """A baseline this model or input cannot have: `baseline_unavailable` (no padding or mask token; loc
    ["baseline"]) or `baseline_token_count` (a baseline text of another token count; loc ["baseline", "text"])."""

    def __init__(self, type_: str, loc: tuple[str, ...], message: str, **ctx: int | str) -> None:
        super().__init__(loc, message)
        self.type = type_
        self.ctx = dict(ctx)


@dataclass(frozen=True)
class Baseline:
    """The baseline as used: its kind, the token whose row it repeats (pad, mask), the text (text), and b."""

    kind: str  # "mean", "pad", "mask", "zeros" or "text"
    token_id: int | None
    token: str | None
    text: str | None
    words: torch.Tensor  # (1, T, E), the word table's dtype and device


_SPECIAL: weakref.WeakKeyDictionary[LoadedModel, dict[str, int | None]] = weakref.WeakKeyDictionary()


def special_token(model: LoadedModel, names: tuple[str, ...]) -> int | None:
    """The lowest id among the tokenizer's added tokens whose string is one of `names`; None when none is."""
    found = _SPECIAL.setdefault(model, {})
    key = "\n".join(names)
    if key not in found:
        plain = set(model.tokenizer.plain_ids())
        found[key] = next((token_id for token_id in range(model.cfg.vocab_size)
                           if token_id not in plain and model.tokenizer.token_text(token_id)[0] in names), None)
    return found[key]


def pad_token(model: LoadedModel) -> int | None:
    return special_token(model, PAD_TOKENS)


def mask_token(model: LoadedModel) -> int | None:
    return special_token(model, MASK_TOKENS)


def mean_embedding(model: LoadedModel) -> torch.Tensor:
    """The mean of the word table's rows 0 .. vocab_size − 1, in float64 then the table's dtype: (E,)."""
    table = model.net.embeddings.word.weight.detach()[: model.cfg.vocab_size]  # (V, E)
    return table.double().mean(dim=0).to(table.dtype)


def check(model: LoadedModel, encoded: Encoded, request: BaselineRequest) -> int | list[int] | None:
    """What `request` needs besides the word table, checked: the pad or mask token's id, a baseline text's ids, or
    None. BaselineError when the model has no such token, or a baseline text makes another number of tokens;
    ValueError for a kind that is not one of KINDS."""
    if isinstance(request, Mapping):
        try:
            other = model.tokenizer.encode(request["text"])
            count = len(other)
        except TooManyTokens as over:  # over the model's limit: surely not the input's count
            count = over.count
        if count != len(encoded):
            raise BaselineError("baseline_token_count", ("baseline", "text"),
                                f"baseline.text makes {count} tokens and the text {len(encoded)}: both need "
                                "the same count (a baseline text replaces the input token by token)",
                                baseline_tokens=count, text_tokens=len(encoded))
        return list(other.ids)
    if request in ("pad", "mask"):
        token_id = pad_token(model) if request == "pad" else mask_token(model)
        if token_id is None:
            what = "padding" if request == "pad" else "mask"
            raise BaselineError("baseline_unavailable", ("baseline",),
                                f"model {model.spec.id!r} has no {what} token, so baseline {request!r} is unavailable; "
                                "choose \"mean\", \"zeros\" or a baseline text", baseline=request)
        return token_id
    if request not in KINDS:
        raise ValueError(f"baseline {request!r} is not one of {', '.join(KINDS)} or {{'text': ...}}")
    return None


def resolve(model: LoadedModel, encoded: Encoded, request: BaselineRequest = DEFAULT) -> Baseline:
    """The baseline `request` names for this input (check's errors when it cannot have it)."""
    needs = check(model, encoded, request)
    word = model.net.embeddings.word
    ids = torch.tensor([encoded.ids], device=model.device)  # (1, T)
    if isinstance(request, Mapping):
        assert isinstance(needs, list)
        words = word(torch.tensor([needs], device=model.device)).detach()  # (1, T, E)
        return Baseline("text", None, None, request["text"], words)
    if isinstance(needs, int):
        words = word(torch.full_like(ids, needs)).detach()
        return Baseline(request, needs, model.tokenizer.token_text(needs)[0], None, words)
    inputs = word(ids).detach()  # (1, T, E)
    if request == "zeros":
        return Baseline("zeros", None, None, None, torch.zeros_like(inputs))
    return Baseline("mean", None, None, None, mean_embedding(model).expand_as(inputs).clone())
