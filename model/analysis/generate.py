"""Generation with the KV cache: a decoder continues a text one token at a time, and shows each new token's
attention as it arrives.

One forward over the prompt fills the cache (model/nets/cache.py) and gives the first next-token
distribution. Then, per new token: choose it from the distribution (the most probable: greedy; or sampled
after a temperature, top-k and top-p, from a generator seeded with `seed`, so that the same settings give
the same tokens), run it alone through the network with the cache (its query against every cached key: the
attention row the answer shows, one per layer and head), which appends its keys and values and gives the
next distribution. Generation stops after `max_new_tokens`, or after a token the checkpoint names as its
end (generation_config.json's or config.json's eos_token_id), as transformers' `generate` does.

A Generation holds the state between tokens, so that a server can run each token as its own job and stop
when the client leaves.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from model.checkpoints.loaded import LoadedModel
from model.errors import RuleError
from model.nets.cache import KVCache
from model.trace import Trace

MAX_NEW_TOKENS = 256
TOP = 5  # alternatives given with each token

GENERATE_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "generate_too_long": (("tokens", "max_new_tokens", "limit"),
                          "the input's tokens plus max_new_tokens over the model's limit"),
}


class GenerateError(RuleError):
    """A generation the model cannot run; `type` is one of GENERATE_RULES."""

    rules = GENERATE_RULES


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen. temperature 0: the most probable (greedy; top_k, top_p and seed do not
    matter). Otherwise the logits are divided by the temperature, only the top_k most probable tokens are kept
    (0: all), then only the most probable ones whose probabilities first reach top_p together (1: all), and
    the token is drawn from what is left, renormalised, with a generator seeded by `seed`."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.temperature >= 0 or self.top_k < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"sampling needs temperature ≥ 0, top_k ≥ 0 and 0 < top_p ≤ 1, got {self}")


def sampling_distribution(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """The probabilities a sampled token is drawn from (V,): temperature, then top-k, then top-p (sampling > 0).

    The largest logit is subtracted before the division, so that a temperature however small gives finite
    numbers (the most probable tokens 0, the others towards −∞) and never inf − inf; float64, in which the
    smallest temperature the request takes is not 0."""
    scaled = (logits.double() - logits.max()) / sampling.temperature  # (V,)
    if 0 < sampling.top_k < scaled.numel():
        kth = torch.topk(scaled, sampling.top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    probs = torch.softmax(scaled, dim=-1)  # (V,)
    if sampling.top_p < 1:
        ordered, order = torch.sort(probs, descending=True)  # (V,)
        before = torch.cumsum(ordered, dim=-1) - ordered  # the probability of the tokens ranked above each
        dropped = order[before >= sampling.top_p]  # the most probable token is always kept (before = 0)
        probs = probs.index_fill(0, dropped, 0.0)
        probs = probs / probs.sum()
    return probs.float()


@dataclass(frozen=True)
class NewToken:
    """One generated token. `index`: its position in the whole sequence (the prompt's tokens come first).
    `probability`, `top_*`: the model's own next-token distribution (softmax of the logits, before any
    temperature, top-k or top-p) for the token chosen and its TOP most probable tokens. `display`: the
    characters this token completes (a token holding only the first bytes of a character shows nothing;
    the one with its last byte shows it). `attention`: per layer (H, index + 1), the token's weights on
    every key up to itself (None when not asked for). `cache_bytes`: the cache's size with this token in it."""

    index: int
    id: int
    text: str
    display: str
    probability: float
    top_ids: list[int]
    top_probabilities: list[float]
    attention: list[torch.Tensor] | None
    cache_bytes: int


class Generation:
    """The state of one text's generation; `step` makes the next token until `finished`."""

    def __init__(self, model: LoadedModel, ids: Sequence[int], max_new_tokens: int, sampling: Sampling,
                 attention: bool = True) -> None:
        net = model.decoder  # TypeError for a model without an LM head
        limit = net.cfg.max_positions
        if len(ids) + max_new_tokens > limit:
            raise GenerateError("generate_too_long", "max_new_tokens",
                                f"{len(ids)} input tokens + {max_new_tokens} new tokens exceed the model's limit "
                                f"of {limit}; ask for at most {max(limit - len(ids), 0)} new tokens or send a "
                                "shorter text",
                                tokens=len(ids), max_new_tokens=max_new_tokens, limit=limit)
        self.model = model
        self.sampling = sampling
        self.attention = attention
        self.prompt = len(ids)
        self.max_new_tokens = max_new_tokens
        self.cache = KVCache(net.cfg.n_layers)
        self.generator = torch.Generator().manual_seed(sampling.seed)
        self.tokens: list[NewToken] = []
        self.finished = max_new_tokens == 0
        self._display = model.tokenizer.stream()
        self.started = time.perf_counter()
        self._logits = self._forward(list(ids), None)  # (V,): the next token's logits

    @torch.inference_mode()
    def _forward(self, ids: list[int], trace: Trace | None) -> torch.Tensor:
        """Run `ids` after the cached tokens; the last one's next-token logits (V,), on the CPU."""
        net = self.model.decoder
        x = net(torch.tensor([ids], device=self.model.device), trace=trace, cache=self.cache)  # (1, T, D)
        return net.logits(x[0, -1]).float().cpu()  # (V,)

    def _choose(self, probs: torch.Tensor) -> int:
        if self.sampling.temperature == 0:
            return int(torch.argmax(probs))
        drawn = sampling_distribution(self._logits, self.sampling)  # (V,)
        return int(torch.multinomial(drawn, 1, generator=self.generator))

    @property
    def text(self) -> str:
        """The new tokens' displays joined: the continuation's text."""
        return "".join(token.display for token in self.tokens)

    @property
    def tokens_per_second(self) -> float:
        """New tokens per second since the generation started (the prompt's forward included)."""
        return len(self.tokens) / max(time.perf_counter() - self.started, 1e-9)

    def step(self) -> NewToken:
        """Choose the next token, run it through the network (its attention row, the distribution after it)."""
        if self.finished:
            raise RuntimeError("this generation is finished")
        probs = torch.softmax(self._logits, dim=-1)  # (V,)
        chosen = self._choose(probs)
        top = torch.topk(probs, min(TOP, probs.numel()))
        trace = Trace(steps=("softmax",)) if self.attention else None
        self._logits = self._forward([chosen], trace)
        token = NewToken(
            index=self.prompt + len(self.tokens), id=chosen, text=self.model.tokenizer.token_text(chosen)[0],
            display=self._display.add(chosen),
            probability=float(probs[chosen]), top_ids=top.indices.tolist(), top_probabilities=top.values.tolist(),
            attention=None if trace is None else [trace.tensor(i, "softmax")[0, :, 0] for i in trace.records],
            cache_bytes=self.cache.nbytes,
        )
        self.tokens.append(token)
        self.finished = len(self.tokens) == self.max_new_tokens or chosen in self.model.stop_ids
        return token
