"""Schemas of /api/v1/sequence: an RNN, a convolution stack and self-attention, side by side."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from model.lab.sequence import MAX_D, MAX_KERNEL, MAX_LAYERS, MAX_LENGTH, MAX_SEED, MIN_KERNEL

from .common import StrictRequest, examples


class ReachRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {},
        {"length": 32, "d": 8, "kernel": 2, "dilated": False, "layers": 6},
        {"length": 128, "d": 32, "kernel": 3, "dilated": True, "layers": 5, "seed": 7},
    ))

    length: int = Field(64, ge=2, le=MAX_LENGTH,
                        description=f"N, the positions of the input sequence (2..{MAX_LENGTH}).")
    d: int = Field(32, ge=1, le=MAX_D, description=f"The width of the input and of all three layers (1..{MAX_D}).")
    kernel: int = Field(3, ge=MIN_KERNEL, le=MAX_KERNEL,
                        description=f"k, the convolutions' kernel width ({MIN_KERNEL}..{MAX_KERNEL}).")
    dilated: bool = Field(True, description="Dilation 2^l in convolution layer l (l = 0, 1, …); false: dilation 1.")
    layers: int = Field(4, ge=1, le=MAX_LAYERS, description=f"The convolution stack's layers (1..{MAX_LAYERS}).")
    seed: int = Field(0, ge=0, le=MAX_SEED,
                      description=f"Seeds the layers' random initialisation and the input (0..{MAX_SEED}).")


class ReachResponse(BaseModel):
    length: int = Field(description="N.")
    d: int
    kernel: int
    dilated: bool
    layers: int = Field(description="The convolution stack's layers.")
    seed: int
    rnn: list[float] = Field(description="N numbers: ‖∂y_{N−1} / ∂x_j‖_F for j = 0..N−1, the GRU (torch.nn.GRU); "
                             "float64 (far back they pass below float32's range).")
    conv: list[float] = Field(description="N numbers: the same for the causal convolution stack (left-padded; "
                              "exactly 0 outside its receptive field).")
    attention: list[float] = Field(description="N numbers: the same for one head of causal self-attention.")
    receptive_field: list[int] = Field(description="The convolution stack's receptive field after each layer "
                                       "1..layers: 1 + (k − 1)·l, or 1 + (k − 1)(2^l − 1) dilated.")
    rnn_path: list[int] = Field(description="N numbers: the sequential steps from input j to position N − 1, "
                                "|N − 1 − j|.")
    conv_path: list[int] = Field(description="N numbers: the convolution layers needed from input j to position "
                                 "N − 1: ⌈Δ / (k − 1)⌉, dilated the fewest L with 1 + (k − 1)(2^L − 1) ≥ Δ + 1.")
    attention_path: list[int] = Field(description="N numbers: 1 (0 at j = N − 1).")
    sequential: dict[str, int] = Field(description="Sequential operations one layer needs for the whole "
                                       "sequence: rnn N, conv 1 (per layer), attention 1.")
