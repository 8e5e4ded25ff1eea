"""Every activation of one forward, by name, and hooks that change them as the network runs.

`run(loaded, encoded, hooks, keep)` runs a loaded model on one tokenized input with the network's taps
(model/nets/taps.py): it keeps the values at the taps named in `keep` and lets each hook read or replace its
value, the network running on with what the hook gives back. What comes back is an Activations: a mapping
"name.layer" -> numpy array (float32, batch axis dropped), "final" alone, in the order the forward reached
them. docs/activations.md lists every name with its shape and place in the block, and their TransformerLens
counterparts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from model.checkpoints import LoadedModel
from model.checkpoints.tokenizer import Encoded, Token
from model.errors import InputError
from model.nets.taps import BLOCK_TAPS, FINAL_TAP, Hook, Taps, split_name
from model.trace import widen

# A hook of the Python API: (the value without the batch axis, float32 torch tensor; the layer) -> a tensor or
# array of the same shape that replaces it, or None to keep it. `final`'s hook gets layer = the number of layers.
UserHook = Callable[[torch.Tensor, int], "torch.Tensor | np.ndarray | None"]


class Activations(Mapping[str, np.ndarray]):
    """The activations of one forward of one input: a read-only mapping "name.layer" -> float32 array, plus
    "final" for a network with a final norm, in the order the forward reached them (`names()`).

    Shapes (batch axis dropped; T tokens, D width, H query heads, G key-value heads, Dk/Dv per-head widths):
    resid_pre, attn_out, resid_mid, mlp_out, resid_post, final (T, D); q, rot_q, z (H, T, Dk|Dv); k, v, rot_k
    (G, T, Dk|Dv); attn_scores, pattern (H, T, T). Each holds the value the network went on with: a hooked
    value after its hook. `tokens` (model.checkpoints.tokenizer.Token) and `ids` are the input's, `model`
    the model's id, `layers` its number of blocks, `logits` the next-token logits (T, V) float32 of a model
    with an LM head (None otherwise; not in the mapping), `hooked` the hook keys, `keep` what was kept."""

    def __init__(self, values: dict[str, np.ndarray], *, tokens: list[Token], ids: list[int], model: str,
                 layers: int, logits: np.ndarray | None, text: str | None = None, pair: str | None = None,
                 hooked: tuple[str, ...] = (), keep: Literal["all"] | tuple[str, ...] = "all") -> None:
        self._values = values
        self.tokens = tokens
        self.ids = ids
        self.model = model
        self.layers = layers
        self.logits = logits
        self.text = text
        self.pair = pair
        self.hooked = hooked
        self.keep = keep

    def __getitem__(self, key: str) -> np.ndarray:
        try:
            return self._values[key]
        except KeyError:
            raise KeyError(f"{key!r} is not among the kept activations; they are {', '.join(self._values) or 'none'}"
                           " (run with keep='all', or name it in keep)") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Activations(model={self.model!r}, tokens={len(self.ids)}, names={len(self._values)})"

    def names(self) -> list[str]:
        """The kept names in network order: resid_pre.0, q.0, … resid_post.0, resid_pre.1, …, final."""
        return list(self._values)

    def stack(self, name: str) -> np.ndarray:
        """One block tap of every layer stacked: (L, …), e.g. stack("resid_post") (L, T, D), stack("pattern")
        (L, H, T, T). KeyError when it was not kept for every layer."""
        if name not in BLOCK_TAPS:
            raise KeyError(f"stack takes a block tap ({', '.join(BLOCK_TAPS)}), not {name!r}")
        missing = [f"{name}.{layer}" for layer in range(self.layers) if f"{name}.{layer}" not in self._values]
        if missing:
            raise KeyError(f"{', '.join(missing)} not kept: run with keep='all' or keep including {name!r}")
        return np.stack([self._values[f"{name}.{layer}"] for layer in range(self.layers)])

    def _arrays(self) -> dict[str, np.ndarray]:
        """Every array by name: the activations, and `logits` when the model has an LM head."""
        return {**self._values, **({"logits": self.logits} if self.logits is not None else {})}

    def _meta(self) -> dict[str, object]:
        return {"kind": "activations", "model": self.model, "text": self.text, "pair": self.pair,
                "tokens": [t.display for t in self.tokens], "ids": list(self.ids), "layers": self.layers,
                "hooks": list(self.hooked), "keep": self.keep if self.keep == "all" else list(self.keep)}

    def save(self, path: str | Path) -> Path:
        """Write the arrays and the metadata to a .npz or .parquet file (attnscope.save); returns the path."""
        from attnscope.save import save
        return save([self], path)


def _hook(key: str, fn: UserHook) -> Hook:
    """A Python API hook as the network's: the batch axis dropped and float32 on its way in, the answer checked
    (shape, type) and turned back to the network's dtype and device, batch axis restored."""
    def hook(value: torch.Tensor, layer: int) -> torch.Tensor | None:
        given = widen(value[0])  # the value without the batch axis, float32
        out = fn(given, layer)
        if out is None:
            return None
        where = key if split_name(key)[1] is not None or key == FINAL_TAP else f"{key}.{layer}"
        if isinstance(out, np.ndarray):
            out = torch.tensor(out)
        if not isinstance(out, torch.Tensor):
            raise InputError(("hooks", key), f"the hook on {where} returned {type(out).__name__}; return a torch "
                             f"tensor or numpy array of shape {tuple(given.shape)}, or None to keep the value")
        if tuple(out.shape) != tuple(given.shape):
            raise InputError(("hooks", key), f"the hook on {where} returned shape {tuple(out.shape)}; return the "
                             f"shape it was given, {tuple(given.shape)} (no batch axis), or None to keep the value")
        return out.to(value.device, value.dtype)[None]
    return hook


def _keep(keep: Collection[str] | str) -> Literal["all"] | tuple[str, ...]:
    if keep == "all":
        return "all"
    names = (keep,) if isinstance(keep, str) else tuple(keep)
    bad = [name for name in names if not isinstance(name, str)]
    if bad:
        raise InputError(("keep",), f"keep takes names (str) or 'all', not {bad[0]!r}")
    return names


def run(loaded: LoadedModel, encoded: Encoded, hooks: Mapping[str, UserHook] | None = None,
        keep: Collection[str] | str = "all", *, text: str | None = None, pair: str | None = None) -> Activations:
    """Run `loaded` on one tokenized input (`encoded`: ids, segments, tokens) and return its activations.

    `hooks`: {"name": fn} hooks that tap in every layer, {"name.layer": fn} one layer's, {"final": fn} the final
    norm's output; fn(tensor, layer) gets the value without the batch axis as a float32 torch tensor and returns
    a tensor or numpy array of the same shape, which replaces the value (the network runs on with it), or None
    to keep it. `keep`: "all", or the names to keep ("name" for every layer, "name.layer", "final"), to save
    memory on long inputs. `text` and `pair` are recorded in the result's metadata when given.

    InputError (a ValueError; loc ("hooks" | "keep", the name)) for an unknown name, a layer out of range,
    rot_q/rot_k on a model without RoPE, final on one without a final norm (the message lists the names), a
    hook that is not callable, or one that returns another shape or type."""
    hooks = dict(hooks or {})
    for key, fn in hooks.items():
        if not isinstance(key, str):
            raise InputError(("hooks",), f"hooks are keyed by tap names such as 'resid_post' or 'z.0', not {key!r}")
        if not callable(fn):
            raise InputError(("hooks", key), f"the hook for {key!r} is {type(fn).__name__}, not a function: give "
                             "fn(tensor, layer) returning a tensor of the same shape or None")
    kept = _keep(keep)
    taps = Taps({key: _hook(key, fn) for key, fn in hooks.items()}, kept)
    net = loaded.net
    ids = torch.tensor([encoded.ids], device=loaded.device)  # (1, T)
    segments = torch.tensor([encoded.segments], device=loaded.device) if loaded.uses_segments else torch.zeros_like(
        ids)
    with torch.inference_mode():
        hidden = net(ids, segments, taps=taps)  # (1, T, D)
        logits = widen(net.logits(hidden)[0]).cpu().numpy() if loaded.lm_head else None  # (T, V)
    values = {name: widen(value[0]).cpu().numpy() for name, value in taps.kept.items()}
    return Activations(values, tokens=list(encoded.tokens), ids=list(encoded.ids), model=loaded.spec.id,
                       layers=loaded.cfg.n_layers, logits=logits, text=text, pair=pair, hooked=tuple(hooks),
                       keep=kept)
