"""The Python API: load a model, read its attention maps and the steps of one layer as numpy arrays."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import torch

from model.analysis import logit_attribution as dla
from model.analysis.generate import Generation, Sampling
from model.analysis.lens import NoLMHead, checked_position
from model.checkpoints import LoadedModel
from model.checkpoints import batch as batching
from model.checkpoints import load as load_model
from model.checkpoints.tokenizer import Encoded, Token
from model.errors import InputError, checked_index, checked_indices
from model.steps import BLOCK_STEPS, STEPS
from model.trace import PER_HEAD_STEPS

# One input of a batch: a text, or a (text, pair) tuple for a model that takes pairs.
Item = str | tuple[str, str | None]


class ItemError(ValueError):
    """An input of a batch the model cannot take: `index` is its place in `texts`, `error` the reason
    (TooManyTokens, or an InputError for a pair the model does not take or a text without tokens)."""

    def __init__(self, index: int, error: ValueError) -> None:
        super().__init__(f"texts[{index}]: {error}")
        self.index = index
        self.error = error


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
class Attention:
    """The attention weights of one input.

    `maps` is float32 of shape (len(layers), len(heads), T, T): maps[i, j, q, k] is the weight that query
    token q gives key token k in head heads[j] of layer layers[i]; each row sums to 1 (for a causal model
    the entries above the diagonal are 0). `layers` and `heads` are the model's indices in the order asked
    for. `tokens` are the T tokens (model.checkpoints.tokenizer.Token: `text` as the tokenizer spells it, `display`
    readable text, `start`/`end` code-point offsets into its segment's text or None for inserted tokens,
    `special`, `segment` 0 for text and 1 for pair, `unknown`), `ids` their vocabulary ids."""

    text: str
    pair: str | None
    tokens: list[Token]
    ids: list[int]
    maps: np.ndarray
    layers: list[int]
    heads: list[int]
    model: str

    def __len__(self) -> int:
        return len(self.ids)

    def map(self, layer: int, head: int) -> np.ndarray:
        """The (T, T) map of the model's layer `layer`, head `head` (indices of the model, not of `maps`)."""
        if layer not in self.layers or head not in self.heads:
            raise KeyError(f"layer {layer}, head {head} is not in this answer (layers {self.layers}, "
                           f"heads {self.heads})")
        block: np.ndarray = self.maps[self.layers.index(layer), self.heads.index(head)]
        return block


class Model:
    """A loaded model; make one with `attnscope.load`."""

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

        Raises InputError (a ValueError) for a pair sent to a model without pairs or a text without tokens,
        TooManyTokens (a ValueError) when the input is over `info.max_tokens`: never truncated."""
        if pair is not None and not self.info.pairs:
            raise InputError(("pair",), f"model {self.info.id!r} ({self.info.architecture}) takes one text, "
                                        "not a pair; leave pair out")
        encoded = self._model.tokenizer.encode(text, pair)
        if not len(encoded):
            raise InputError(("text",), f"the text {text!r} makes no tokens for model {self.info.id!r}; "
                                        "give a text with at least one character")
        return encoded

    def _chosen(self, layers: Sequence[int] | None, heads: Sequence[int] | None) -> tuple[list[int], list[int]]:
        return (checked_indices(None if layers is None else list(layers), self.info.layers, "layers"),
                checked_indices(None if heads is None else list(heads), self.info.heads, "heads"))

    def _answer(self, text: str, pair: str | None, encoded: Encoded, maps: torch.Tensor, layers: list[int],
                heads: list[int]) -> Attention:
        return Attention(text=text, pair=pair, tokens=list(encoded.tokens), ids=list(encoded.ids),
                         maps=maps.numpy().astype(np.float32, copy=False), layers=layers, heads=heads,
                         model=self.info.id)

    def attention(self, text: str, pair: str | None = None, layers: Sequence[int] | None = None,
                  heads: Sequence[int] | None = None) -> Attention:
        """The attention maps of one input (one forward, as the explorer's): `layers` and `heads` are the
        model's indices to keep, in that order (None: all).

        Raises IndexOutOfRange (a ValueError naming the valid range) for a layer or head the model has not,
        and the errors of `encode`."""
        chosen_layers, chosen_heads = self._chosen(layers, heads)
        encoded = self.encode(text, pair)
        every = self._model.attention_maps(encoded).select(chosen_layers, chosen_heads)  # per layer (H', T, T)
        return self._answer(text, pair, encoded, torch.stack(every), chosen_layers, chosen_heads)

    def iter_attention_batch(self, texts: Sequence[Item], batch_size: int = batching.DEFAULT_BATCH_SIZE,
                             layers: Sequence[int] | None = None, heads: Sequence[int] | None = None,
                             ) -> Iterator[list[tuple[int, Attention]]]:
        """As `attention_batch`, one batch at a time: yields [(index into texts, Attention), ...] per batch,
        the longest inputs first (so that each batch pads little). Every input is tokenized and checked
        before the first forward."""
        chosen_layers, chosen_heads = self._chosen(layers, heads)
        pairs = [(item, None) if isinstance(item, str) else item for item in texts]
        encodings = []
        for i, (text, pair) in enumerate(pairs):
            try:
                encodings.append(self.encode(text, pair))
            except ValueError as exc:
                raise ItemError(i, exc) from exc
        return self._iter_encoded(pairs, encodings, batch_size, chosen_layers, chosen_heads)

    def _iter_encoded(self, pairs: Sequence[tuple[str, str | None]], encodings: Sequence[Encoded], batch_size: int,
                      layers: list[int], heads: list[int]) -> Iterator[list[tuple[int, Attention]]]:
        for results in batching.iter_attention_maps(self._model, encodings, layers, heads, batch_size):
            yield [(i, self._answer(*pairs[i], encodings[i], maps, layers, heads)) for i, maps in results]

    def attention_batch(self, texts: Sequence[Item], batch_size: int = batching.DEFAULT_BATCH_SIZE,
                        layers: Sequence[int] | None = None, heads: Sequence[int] | None = None,
                        progress: Callable[[int, int], None] | None = None) -> list[Attention]:
        """The attention maps of many inputs, `batch_size` to a forward, in the order of `texts`.

        An item is a text or a (text, pair) tuple. Inputs are sorted by length and each batch is padded to
        its longest, the padding hidden from every query by a mask (model/checkpoints/batch.py): each answer equals
        `attention` of that input alone up to float32 rounding (about 1e-6). `progress(done, total)` is called
        after each batch. Raises as `attention` does, and ItemError naming the first input it cannot take."""
        out: list[Attention | None] = [None] * len(texts)
        done = 0
        for results in self.iter_attention_batch(texts, batch_size, layers, heads):
            for i, answer in results:
                out[i] = answer
            done += len(results)
            if progress is not None:
                progress(done, len(texts))
        return [a for a in out if a is not None]

    def generate(self, text: str, max_new_tokens: int = 20, *, temperature: float = 0.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int = 0, attention: bool = True) -> Iterator[NewToken]:
        """Continue `text` one token at a time with the KV cache, yielding each NewToken as it is made: greedy
        (temperature 0, the default; the tokens of transformers' generate without sampling) or sampled after
        temperature, top-k (0: all) and top-p (1: all) from a generator seeded with `seed`. Stops after
        `max_new_tokens` or at the model's end token. Only for a model with an LM head (GPT-2, the Llama
        family): TypeError otherwise; GenerateError (a ValueError) when the text's tokens and max_new_tokens
        together exceed the model's limit; ValueError for a temperature < 0, top_k < 0 or top_p outside (0, 1]."""
        run = Generation(self._model, self.encode(text).ids, max_new_tokens, Sampling(temperature, top_k, top_p, seed),
                         attention)
        decode = self._model.tokenizer.token_text
        while not run.finished:
            t = run.step()
            yield NewToken(index=t.index, id=t.id, text=t.text, display=t.display, probability=t.probability,
                           top=[(i, decode(i)[1], p) for i, p in zip(t.top_ids, t.top_probabilities, strict=True)],
                           attention=None if t.attention is None else torch.stack(t.attention).numpy(),
                           cache_bytes=t.cache_bytes)

    def logit_attribution(self, text: str, answer: Sequence[int], position: int | None = None) -> LogitAttribution:
        """Direct logit attribution at `position` (None: the last token) of `answer`: [id], that token's logit, or
        [good, bad], their logit difference (LogitAttribution). Only for a model with an LM head (GPT-2, the
        Llama family). Raises as POST /api/v1/logit-attribution refuses: NoLMHead (`no_lm_head`) for an encoder,
        AnswerError (`answer_count`, `answer_out_of_range`, `answer_same`), InputError for an answer item that is
        not an int, PositionOutOfRange (an IndexOutOfRange), and the errors of `encode`."""
        if not self._model.lm_head:
            raise NoLMHead(self.info.id, [], "direct logit attribution",
                           "load a decoder such as GPT-2 or a Llama-family checkpoint")
        encoded = self.encode(text)
        at = checked_position(position, len(encoded))
        chosen = dla.checked_answer(list(answer), self._model.cfg.vocab_size)
        found = dla.logit_attribution(self._model.decoder, encoded.ids, at, chosen)
        bias = found.attention_bias
        return LogitAttribution(
            tokens=list(encoded.tokens), position=at,
            answer=[(i, self._model.tokenizer.token_text(i)[1]) for i in found.answer],
            heads=found.heads.numpy(), mlp=found.mlp.numpy(), attention_bias=None if bias is None else bias.numpy(),
            embeddings=found.embeddings, norm_bias=found.norm_bias, total=found.total, logit=found.logit,
            capped=found.capped, softcap=found.softcap, norm=found.norm, scale=found.scale, model=self.info.id)

    def trace(self, text: str, layer: int, head: int | None = None, pair: str | None = None,
              block: bool = False) -> dict[str, np.ndarray]:
        """Every step of one layer's attention (model/steps.py STEPS), as float32 numpy arrays in step order.

        Keys and shapes (T tokens, D the model width, H heads, Dh = D / H): `input` (T, D); `project.q`,
        `project.k`, `project.v` (T, D); `split.q`, `split.k`, `split.v` (H, T, Dh); `scores`, `scale`, `mask`,
        `softmax` (H, T, T); `weighted_sum` (H, T, Dh); `concat` (T, D); `output` (T, D). `mask` holds -inf
        where a key is hidden (the upper triangle of a causal model). With `head` given, the per-head steps
        are that head's alone, without the head axis ((T, Dh), (T, T)). `softmax` equals the layer's map
        from `attention`. A model with RoPE: `split.q` and `split.k` are before the rotation, and
        `rotated.q`, `rotated.k` (H, T, Dh) after it (`scores` = rotated.q · rotated.kᵀ). With `block`, the
        rest of the layer's block follows as `block.<step>` (model/steps.py BLOCK_STEPS: the residual sums, the
        norms, the MLP inside, (T, D) or (T, d_ff)) in the order the block computes them."""
        checked_index(layer, self.info.layers, "layers", "layer")
        if head is not None:
            checked_index(head, self.info.heads, "heads", "head")
        encoded = self.encode(text, pair)
        record = self._model.trace_layer(encoded, layer, None if head is None else [head], block=block)
        out: dict[str, np.ndarray] = {}
        for step in (*STEPS[:STEPS.index("split") + 1], "rotated", *STEPS[STEPS.index("split") + 1:]):
            if step not in record:  # "rotated": RoPE only
                continue
            value = record[step]
            parts = value.items() if isinstance(value, dict) else [("", value)]
            for name, tensor in parts:
                array = tensor.numpy().astype(np.float32, copy=False)
                if head is not None and (step in PER_HEAD_STEPS or step == "rotated"):
                    array = array[0]
                out[f"{step}.{name}" if name else step] = array
        for step, value in record.items():
            if step in BLOCK_STEPS:
                out[f"block.{step}"] = cast(torch.Tensor, value).numpy().astype(np.float32, copy=False)
        return out


@dataclass(frozen=True)
class LogitAttribution:
    """Direct logit attribution (model/analysis/logit_attribution.py) at `position` of `answer`'s logit ([id]) or
    logit difference ([good, bad]), every part through the final norm with its scale frozen (`scale`, of the
    `norm` "layer" or "rms") and dotted with the answer's unembedding row. `heads` float64 (layers, heads): each
    head's share z_h · W_O[h] of its layer's output projection; `mlp` (layers,): each MLP's output;
    `attention_bias` (layers,) or None: each output projection's bias; `embeddings`; `norm_bias` (the final
    LayerNorm's β, None for RMSNorm). `total` is their sum, equal to `logit`, the model's own logit (or
    difference) before any soft-cap, up to rounding; `capped` after the cap of cap · tanh(logit / cap) (`softcap`,
    Gemma 2; without one equal to `logit`). `tokens`: the input's tokens; `answer`: (id, display) pairs."""

    tokens: list[Token]
    position: int
    answer: list[tuple[int, str]]
    heads: np.ndarray
    mlp: np.ndarray
    attention_bias: np.ndarray | None
    embeddings: float
    norm_bias: float | None
    total: float
    logit: float
    capped: float
    softcap: float | None
    norm: str
    scale: float
    model: str


@dataclass(frozen=True)
class NewToken:
    """One token `Model.generate` added. `index`: its position in the whole sequence (the text's tokens come
    first); `text`: the tokenizer's token string; `display`: the characters it completes (a token holding only
    the first bytes of a character shows "", the one with its last byte shows the character); `probability`:
    the model's own probability of it (softmax of the logits, before temperature, top-k or top-p); `top`: the
    five most probable tokens then, as (id, the tokenizer's decoding of that id, probability); `attention`:
    float32 (layers, heads, index + 1), its weights on every token up to itself (None when not asked for);
    `cache_bytes`: the KV cache's size with it."""

    index: int
    id: int
    text: str
    display: str
    probability: float
    top: list[tuple[int, str, float]]
    attention: np.ndarray | None
    cache_bytes: int


def load(name_or_path: str | Path = "minilm", device: str = "cpu", dtype: str = "float32") -> Model:
    """A model by id ("minilm", packaged with attnscope), from a local Hugging Face checkpoint directory
    (BERT, RoBERTa, DistilBERT, ELECTRA, GPT-2, Llama, Mistral, Qwen2, Qwen3 or Gemma 2: config.json,
    model.safetensors (sharded too) or pytorch_model.bin, tokenizer.json or the vocabulary files) or by
    Hugging Face repo id ("ORG/NAME", "ORG/NAME@REVISION") from the local cache (HF_HUB_CACHE, HF_HOME; a
    directory of that name wins), on `device` ("cpu" or "cuda"), its weights as `dtype` ("float32", or
    "bfloat16": half the memory, faster on a CPU with AVX-512 BF16 or AMX, maps a few hundredths from
    float32's; answers are float32 either way). Nothing is downloaded: a repo id not in the cache raises
    CheckpointError naming the cache and the `hf download` command.

    Raises UnknownModel (a LookupError naming the known ids) for a name that is neither, CheckpointError
    (naming the file and the problem) for a directory it cannot load, DeviceError (a ValueError) for a
    device or dtype it cannot use."""
    return Model(load_model(name_or_path, device, dtype=dtype))
