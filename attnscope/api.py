"""The Python API: load a model, read its attention maps and the steps of one layer as numpy arrays."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import numpy as np
import torch

from app.schemas.api import AttentionRequest, TraceRequest
from model.analysis import logit_attribution as dla
from model.analysis.generate import Generation, Sampling
from model.analysis.lens import NoLMHead, checked_position
from model.checkpoints import batch as batching
from model.checkpoints import load as load_model
from model.checkpoints.tokenizer import Encoded
from model.errors import checked_index
from model.nets.edit import Edit
from model.steps import BLOCK_STEPS, STEPS
from model.trace import PER_HEAD_STEPS

from . import activations
from .activations import Activations, UserHook
from .analyses import MapAnalyses
from .checks import edit_fields, validated
from .core import ModelInfo
from .experiments import DECODER_HINT, OutputAnalyses
from .results import Attention
from .results_causal import LogitAttribution

__all__ = ["Attention", "Item", "ItemError", "LogitAttribution", "Model", "ModelInfo", "NewToken", "load"]

# One input of a batch: a text, or a (text, pair) tuple for a model that takes pairs.
Item = str | tuple[str, str | None]


class ItemError(ValueError):
    """An input of a batch the model cannot take: `index` is its place in `texts`, `error` the reason
    (TooManyTokens, or an InputError for a pair the model does not take or a text without tokens)."""

    def __init__(self, index: int, error: ValueError) -> None:
        super().__init__(f"texts[{index}]: {error}")
        self.index = index
        self.error = error


class Model(MapAnalyses, OutputAnalyses):
    """A loaded model; make one with `attnscope.load`. Its methods: attention, attention_batch,
    iter_attention_batch, trace, generate, logit_attribution (here); metrics, detect, mean, rollout, contributions,
    edit_effect (attnscope/analyses.py); lens, patch, attribute (attnscope/experiments.py). docs/python.md lists them
    all with their answers' fields and shapes."""

    def _answer(self, text: str, pair: str | None, encoded: Encoded, maps: torch.Tensor, layers: list[int],
                heads: list[int]) -> Attention:
        return Attention(text=text, pair=pair, tokens=list(encoded.tokens), ids=list(encoded.ids),
                         maps=maps.numpy().astype(np.float32, copy=False), layers=layers, heads=heads,
                         model=self.info.id)

    def attention(self, text: str, pair: str | None = None, layers: Sequence[int] | None = None,
                  heads: Sequence[int] | None = None, edit: Mapping[str, object] | Edit | None = None) -> Attention:
        """The attention maps of one input (one forward, as the explorer's): `layers` and `heads` are the
        model's indices to keep, in that order (None: all). `edit`: a what-if edit of one layer's heads (the
        REST edit's fields as a dict, {"layer": 2, "heads": [5], "temperature": 3}, or a model.nets.edit.Edit):
        every later layer is recomputed on the edited hidden state (POST /api/v1/attention with `edit`).

        Raises FieldError (the REST's words) for indices that repeat, are not ints or are an empty list, and for
        an edit the REST refuses; IndexOutOfRange (a ValueError naming the valid range) for a layer or head the
        model has not; EditError for hidden keys beyond the input; and the errors of `encode`."""
        p = self._prepare(AttentionRequest, text=text, text_pair=pair, layers=layers, heads=heads,
                          edit=edit_fields(edit))
        every = self._model.attention_maps(p.encoded, edit=p.edit).select(p.layers, p.heads)  # per layer (H', T, T)
        answer = self._answer(p.req.text, p.req.text_pair, p.encoded, torch.stack(every), p.layers, p.heads)
        if p.edit is None:
            return answer
        return replace(answer, edit=p.req.edit.model_dump())

    def iter_attention_batch(self, texts: Sequence[Item], batch_size: int = batching.DEFAULT_BATCH_SIZE,
                             layers: Sequence[int] | None = None, heads: Sequence[int] | None = None,
                             ) -> Iterator[list[tuple[int, Attention]]]:
        """As `attention_batch`, one batch at a time: yields [(index into texts, Attention), ...] per batch,
        the longest inputs first (so that each batch pads little). Every input is tokenized and checked
        before the first forward."""
        chosen_layers, chosen_heads = self._chosen(layers, heads)
        pairs = [item if isinstance(item, tuple) else (item, None) for item in texts]
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
            raise NoLMHead(self.info.id, [], "direct logit attribution", DECODER_HINT)
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
            capped=found.capped, softcap=found.softcap, norm=found.norm, scale=found.scale, model=self.info.id,
            text=text)

    def run(self, text: str, hooks: Mapping[str, UserHook] | None = None, pair: str | None = None,
            keep: Collection[str] | str = "all") -> Activations:
        """Every named activation of one forward (attnscope/activations.py, docs/activations.md): a mapping
        "resid_pre.0", "q.0", …, "resid_post.{L-1}", "final" -> float32 arrays without the batch axis, and `logits`
        (T, V) for a model with an LM head. `hooks` {"name": fn} (every layer), {"name.layer": fn} (one) or
        {"final": fn}: fn(tensor, layer) reads the value as the network computes it and returns a tensor or array
        of its shape that replaces it (the network runs on with it: ablate a head's z, steer the residual, patch
        from another run's Activations), or None to keep it. `keep`: "all" or the names to keep. Raises the errors
        of `encode`, and InputError naming the valid names for an unknown name, a layer out of range or a hook
        that returns another shape."""
        encoded = self.encode(text, pair)
        return activations.run(self._model, encoded, hooks, keep, text=text, pair=pair)

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
        req = validated(TraceRequest, text=text, text_pair=pair, layer=layer, head=head, block=block)
        self._check_pair(req.text_pair)
        checked_index(req.layer, self.info.layers, "layers", "layer")
        if req.head is not None:
            checked_index(req.head, self.info.heads, "heads", "head")
        encoded = self._tokens(req.text, req.text_pair)
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
