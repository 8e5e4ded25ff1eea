"""The toy's settings and seeded parameters (model/lab/toy.py): the rules between its options, the seeded
defaults (N(0, 1) / sqrt(rows) rounded to 2 decimals from torch.Generator().manual_seed(seed + stream)) and
the additive scorer's parameters."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

from model.errors import ToyShapeError
from model.lab import variants

MAX_SIDE = 64  # rows and columns of any toy matrix
ADDITIVE_STREAMS = {"w_q": 5, "w_k": 6, "v": 7}
POSITIONS = ("none", "sinusoidal", "rope", "alibi")


def seeded(shape: tuple[int, ...], seed: int, stream: int) -> torch.Tensor:
    """A default parameter: N(0, 1) / sqrt(shape[-2] or 1) rounded to 2 decimals, from seed + stream."""
    generator = torch.Generator().manual_seed(seed + stream)
    fan_in = shape[-2] if len(shape) > 1 else shape[-1]
    w = torch.randn(shape, generator=generator, dtype=torch.float64) / math.sqrt(fan_in)
    return torch.round(w, decimals=2)


def _shape(t: torch.Tensor | None) -> str:
    return "ragged" if t is None else "x".join(str(n) for n in t.shape) or "scalar"


def additive_parameters(given: Mapping[str, object] | None, n_heads: int, d_keys: int,
                        seed: int) -> variants.AdditiveScore:
    """The additive (Bahdanau) parameters: the ones given (all three) or seeded ones with d_attn = d_keys."""
    if not given:
        return variants.AdditiveScore(
            w_q=seeded((n_heads, d_keys, d_keys), seed, ADDITIVE_STREAMS["w_q"]),
            w_k=seeded((n_heads, d_keys, d_keys), seed, ADDITIVE_STREAMS["w_k"]),
            v=seeded((n_heads, d_keys), seed, ADDITIVE_STREAMS["v"]),
        )
    tensors: dict[str, torch.Tensor | None] = {}
    for name in ADDITIVE_STREAMS:
        try:
            tensors[name] = torch.tensor(given[name], dtype=torch.float64) if name in given else None
        except (ValueError, TypeError):
            tensors[name] = None
    w_q = tensors["w_q"]
    d_attn = int(w_q.shape[-1]) if w_q is not None and w_q.dim() == 3 else d_keys
    if n_heads * d_attn > MAX_SIDE:  # the scorer's tanh layer is (H, T, S, d_attn): bounded like the heads' widths
        raise ToyShapeError("toy_additive_width", ("additive", "w_q"),
                            f"additive.w_q is {d_attn} wide (d_attn) with {n_heads} heads, {n_heads * d_attn} in all; "
                            f"send d_attn from 1 to {MAX_SIDE // n_heads}", width=n_heads * d_attn, n_heads=n_heads,
                            max=MAX_SIDE)
    want = {"w_q": (n_heads, d_keys, d_attn), "w_k": (n_heads, d_keys, d_attn), "v": (n_heads, d_attn)}
    for name, shape in want.items():
        t = tensors[name]
        if t is None or tuple(t.shape) != shape or (t.numel() and not torch.isfinite(t).all()):
            have = "missing" if name not in given else _shape(t)
            need = "x".join(str(n) for n in shape)
            raise ToyShapeError("toy_additive_shape", ("additive", name),
                                f"additive.{name} is {have}; with n_heads {n_heads} and d_keys {d_keys} it must be "
                                f"{need} of finite numbers (d_attn {d_attn} from w_q)", shape=have, want=need)
    return variants.AdditiveScore(w_q=tensors["w_q"], w_k=tensors["w_k"], v=tensors["v"])  # type: ignore[arg-type]


def check_settings(variant: str, positions: str, temperature: float, seed: int, straight_through: bool,
                    additive: Mapping[str, object] | None) -> None:
    """The settings' own rules (the web schema states most of them too)."""
    if variant not in variants.VARIANTS:
        raise ToyShapeError("toy_variant", ("variant",),
                            f"unknown variant {variant!r}; use one of {', '.join(variants.VARIANTS)}", variant=variant)
    if positions not in POSITIONS:
        raise ToyShapeError("toy_positions", ("positions",),
                            f"unknown positions {positions!r}; use one of {', '.join(POSITIONS)}", positions=positions)
    if not (math.isfinite(temperature) and temperature >= variants.MIN_TEMPERATURE):
        raise ToyShapeError("toy_temperature", ("temperature",),
                            f"temperature {temperature} is below {variants.MIN_TEMPERATURE:g}; send a number from "
                            f"{variants.MIN_TEMPERATURE:g} up (1 leaves the scores as they are, below 1 sharpens the "
                            "rows, above 1 flattens them)", temperature=temperature, min=variants.MIN_TEMPERATURE)
    if not 0 <= seed <= variants.MAX_SEED:
        raise ToyShapeError("toy_seed_range", ("seed",),
                            f"seed {seed} is out of range; send a seed from 0 to {variants.MAX_SEED}",
                            seed=seed, max=variants.MAX_SEED)
    if variant == "linear" and positions == "alibi":
        raise ToyShapeError("toy_linear_alibi", ("positions",),
                            "linear attention divides kernel scores φ(q)·φ(k) > 0 by their sum, and ALiBi's bias "
                            "would make them negative; pick other positions or another variant")
    if straight_through and variant != "gumbel":
        raise ToyShapeError("toy_straight_through", ("straight_through",),
                            f"straight_through is for the gumbel variant, not {variant}; send variant gumbel or "
                            "remove straight_through", variant=variant)
    if additive and variant != "additive":
        raise ToyShapeError("toy_additive_variant", ("additive",),
                            f"additive parameters sent with variant {variant}; send variant additive or remove "
                            "additive", variant=variant)


GENERAL_STREAM = 9  # Luong's general W_s: seeded((H, d_keys, d_keys), seed, GENERAL_STREAM)
MIN_TAU = 1e-6  # like the temperature's floor: keeps scores · τ away from 0 · inf
MAX_NUMBER = 1e6  # as the toy's MAX_ABS


def scoring_options(variant: str, keys: int, scale: float | None, tau: float,
                    delta: float | Sequence[float]) -> torch.Tensor:
    """Check cosine's scale and the de-stationary τ and δ; returns δ as (S,) float64 (one number: every key)."""
    if scale is not None and variant != "cosine":
        raise ToyShapeError("toy_scale_variant", ("scale",), f"scale sent with variant {variant}; it is the cosine "
                            "variant's factor: send variant cosine or remove scale", variant=variant)
    if scale is not None and not (math.isfinite(scale) and 0 < scale <= MAX_NUMBER):
        raise ToyShapeError("toy_scale_range", ("scale",), f"scale {scale} must be a number above 0 and at most "
                            f"{MAX_NUMBER:g}", scale=scale, max=MAX_NUMBER)
    if not (math.isfinite(tau) and MIN_TAU <= tau <= MAX_NUMBER):
        raise ToyShapeError("toy_tau_range", ("tau",), f"tau {tau} must be from {MIN_TAU:g} to {MAX_NUMBER:g} "
                            "(1 leaves the scores as they are)", tau=tau, min=MIN_TAU, max=MAX_NUMBER)
    numbers = [float(delta)] * keys if isinstance(delta, (int, float)) else [float(x) for x in delta]
    if len(numbers) != keys:
        raise ToyShapeError("toy_delta_length", ("delta",), f"delta has {len(numbers)} numbers; send one number "
                            f"or one per key ({keys})", count=len(numbers), keys=keys)
    for j, x in enumerate(numbers):
        if not (math.isfinite(x) and abs(x) <= MAX_NUMBER):
            loc = ("delta",) if isinstance(delta, (int, float)) else ("delta", str(j))
            raise ToyShapeError("toy_delta_number", loc, f"delta holds {x}; send finite numbers of magnitude at most "
                                f"{MAX_NUMBER:g}", max=MAX_NUMBER)
    if variant == "linear" and min(numbers) < 0:
        raise ToyShapeError("toy_linear_delta", ("delta",), "linear attention divides kernel scores φ(q)·φ(k) > 0 by "
                            "their sum, and a negative delta could make them negative; send delta ≥ 0 or another "
                            "variant")
    return torch.tensor(numbers, dtype=torch.float64)  # (S,)
