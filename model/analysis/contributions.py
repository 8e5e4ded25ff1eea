"""Norm-based contributions (Kobayashi et al. 2020, "Attention is Not Only a Weight"): how much each key
token's transformed value adds to each query's output, not only how much weight it gets."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def contributions(weights: torch.Tensor, values: torch.Tensor, w_o: torch.Tensor,
                  heads: Sequence[int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Kobayashi et al. 2020: ||a_ij f_h(x_j)|| per head, and the norm of the sum over all heads.

    weights: (H, N, N) softmax weights a_hij of one layer; values: (H, N, Dv), head h's value vectors
    x_j W_v^h + b_v^h (the trace's `split` v); w_o: (H·Dv, D), the output projection acting as x W_o, i.e.
    the transpose of nn.Linear's weight; its rows h·Dv..(h+1)·Dv − 1 are W_o^h. f_h(x_j) = v_hj W_o^h.

    Returns (per_head, layer_sum): per_head (len(heads), N, N) = a_hij·||f_h(x_j)|| for the chosen heads
    (all when None, in the order given); layer_sum (N, N) = ||Σ_h a_hij f_h(x_j)|| over every head of the
    layer, from Gram matrices G_j[h, g] = <f_h(x_j), f_g(x_j)>: ||·||² = Σ_{h,g} a_hij a_gij G_j[h, g],
    so no N×N×D tensor is made. The output bias b_o is left out, as in the paper's α f(x). float64 inside.
    """
    h, n, dv = values.shape
    if weights.shape != (h, n, n):
        raise ValueError(f"weights have shape {tuple(weights.shape)}, expected {(h, n, n)} for values {(h, n, dv)}")
    if w_o.dim() != 2 or w_o.shape[0] != h * dv:
        raise ValueError(f"w_o has shape {tuple(w_o.shape)}, expected ({h * dv}, D) for {h} heads of width {dv}")
    a = weights.double()
    per_head_w_o = w_o.double().view(h, dv, -1)  # (H, Dv, D): W_o^h
    f = values.double() @ per_head_w_o  # (H, N, D): f_h(x_j)
    norms = f.norm(dim=-1)  # (H, N): ||f_h(x_j)||
    chosen = list(range(h)) if heads is None else list(heads)
    per_head = a[chosen] * norms[chosen][:, None, :]  # (h, N, N): a_hij ||f_h(x_j)||, as a_hij >= 0
    gram = torch.einsum("hjd,gjd->jhg", f, f)  # (N, H, H)
    by_key = a.permute(2, 1, 0).contiguous()  # (N_j, N_i, H): a_{h, i, j} at [j, i, h]; contiguous for bmm (50x)
    squared = (torch.bmm(by_key, gram) * by_key).sum(dim=-1)  # (N_j, N_i): Σ_{h,g} a_hij G_j[h, g] a_gij
    layer_sum = squared.clamp_min(0.0).sqrt().T  # (N_i, N_j)
    return per_head.float(), layer_sum.float()
