"""The models, /attention, /attention/summary and /trace: requests and answers (app/routes/api.py)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from model.nets.edit import MAX_FACTOR, MAX_SEED, MAX_TEMPERATURE, MIN_TEMPERATURE, Edit

from .common import (
    ChosenHeads,
    ChosenLayers,
    Index,
    Matrix,
    Stack,
    Steps,
    StrictRequest,
    TextRequest,
    TokenInfo,
    check_distinct,
    examples,
)

EditTemperature = Annotated[
    float,
    Field(ge=MIN_TEMPERATURE, le=MAX_TEMPERATURE, allow_inf_nan=False,
          description=f"Divides the chosen heads' scaled scores before the softmax: a finite number from "
          f"{MIN_TEMPERATURE:g} to {MAX_TEMPERATURE:g}; above 1 flattens their rows, below 1 sharpens them, 1 "
          "keeps them."),
]


MAX_HIDDEN_KEYS = 4096  # more than any model's token limit; the input's own length is checked on the server


EditIndex = Annotated[int, Field(ge=0)]  # refused below 0 by the schema itself: Edit takes no negative index


EditHeads = Annotated[
    list[EditIndex], Field(min_length=1, json_schema_extra={"uniqueItems": True}), AfterValidator(check_distinct)
]


EditKeys = Annotated[
    list[EditIndex],
    Field(max_length=MAX_HIDDEN_KEYS, json_schema_extra={"uniqueItems": True}),
    AfterValidator(check_distinct),
]


class AttentionEdit(StrictRequest):
    """A what-if edit of one layer's heads, recomputing every later layer (the `edit` of /attention).

    Rules: `layer` is below the model's `n_layers` and every entry of `heads` below its `n_heads`, else 422
    `index_out_of_range` (`loc` ["body", "edit", "layer"] or ["body", "edit", "heads", i]); `heads` are
    distinct, at least one, or null for every head; `temperature` is a finite number from 0.01 to 100
    (default 1); `hidden_keys` are distinct token indices below the input's token count, else 422
    `edit_hidden_key` (ctx {key, tokens}, `loc` ["body", "edit", "hidden_keys", i]); `ablate` is a boolean
    (default false). The chosen heads' scaled scores are divided by the temperature, the hidden keys get
    −inf for those heads (a row with every key hidden becomes zeros), and with `ablate` those heads'
    weighted sums are zeroed (their weights are still computed and shown). Layers before `layer` are
    unchanged; every later layer runs on the edited hidden state. Temperature 1, no hidden keys and no
    ablation give exactly the unedited numbers.

    `kind` "probsparse" (Informer's ProbSparse self-attention, model/nets/sparse.py): the chosen heads keep the
    softmax rows of their u = min(`factor`·⌈ln N⌉, N) queries with the largest sparsity measure M (measured on
    `factor`·⌈ln N⌉ keys per query sampled from `seed`) and every other query gets the mean of V, or in a causal
    model the cumulative sum of V up to its position (as Informer's source does). It takes no temperature,
    hidden keys or ablation (422 `edit_probsparse_alone`) and at least 2 tokens (422 `edit_probsparse_short`);
    POST /api/v1/edit/effect answers the active queries and what the edit changes.
    """

    model_config = ConfigDict(json_schema_extra=examples(
        {"layer": 2, "heads": [5], "temperature": 3},
        {"layer": 0, "heads": None, "hidden_keys": [0], "ablate": False},
        {"layer": 4, "heads": [1, 7], "ablate": True},
        {"layer": 1, "heads": None, "kind": "probsparse", "factor": 1},
    ))

    kind: Literal["weights", "probsparse"] = Field(
        "weights", description="`weights`: the temperature, hidden keys and ablation below; `probsparse`: "
        "Informer's ProbSparse in place of the chosen heads' softmax attention.")

    layer: EditIndex = Field(description="The layer to edit (0-based), below the model's n_layers.")
    heads: EditHeads | None = Field(None, description="Distinct heads of that layer to edit; null means all.")
    temperature: EditTemperature = 1.0
    hidden_keys: EditKeys = Field(
        default_factory=list, description="Distinct token indices hidden from every query of the chosen heads.")
    ablate: bool = Field(False, description="Zero the chosen heads' weighted sums (their output).")
    factor: int = Field(5, ge=1, le=MAX_FACTOR, description="ProbSparse's sampling factor c (kind probsparse): "
                        "c·⌈ln N⌉ keys sampled per query and as many active queries per head.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Seeds ProbSparse's sampled keys (kind probsparse).")

    def to_edit(self) -> Edit:
        """The model's Edit (model/nets/edit.py); its indices are checked against the model by the forward."""
        return Edit(layer=self.layer, heads=None if self.heads is None else tuple(self.heads),
                    temperature=float(self.temperature), hidden_keys=tuple(self.hidden_keys), ablate=self.ablate,
                    probsparse=self.factor if self.kind == "probsparse" else None,
                    seed=self.seed if self.kind == "probsparse" else 0)


class AttentionRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat.", "layers": [2], "heads": [5]},
        {"text": "Where did the dog go?", "text_pair": "It went home.", "model": "minilm", "layers": [0, 5]},
        {"text": "The cat sat on the mat because it was tired.", "layers": [2, 3],
         "edit": {"layer": 2, "heads": [5], "temperature": 3}},
    ))

    layers: ChosenLayers = None
    heads: ChosenHeads = None
    edit: AttentionEdit | None = Field(
        None, description="A what-if edit of one layer's heads; every later layer is recomputed on the edited "
        "hidden state, and the answer says `edited: true`. Null: the model as it is."
    )


class TraceRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat.", "layer": 2, "head": 5},
        {"text": "Where did the dog go?", "text_pair": "It went home.", "layer": 0, "head": None},
    ))

    layer: Index = Field(description="The layer to trace (0-based), below the model's n_layers.")
    head: Index | None = Field(None, description="One head to trace, below the model's n_heads; null means all.")
    block: bool = Field(False, description="true: also the rest of the layer's block (`block` in the answer): the "
                        "residual sums, the norms and the MLP, about 6·N·d_model + 2·N·d_ff numbers more.")


class SummaryRequest(AttentionRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat.", "size": 4},
        {"text": "Where did the dog go?", "text_pair": "It went home.", "heads": [0, 11], "size": 64},
    ))

    size: int = Field(64, ge=1, le=64, description="Largest side of a pooled map (at most 64).")


class Encoding(StrEnum):
    """`json`: the JSON body. `u16`: a binary body of uint16 fixed-point weights (layout in the description)."""

    json = "json"
    u16 = "u16"


class TraceEncoding(StrEnum):
    """`json`: the JSON body. `f32`: a binary body of little-endian float32 arrays (layout in the description)."""

    json = "json"
    f32 = "f32"


class ModelInfo(BaseModel):
    id: str
    name: str
    architecture: str
    n_layers: int
    n_heads: int
    d_model: int
    d_head: int
    n_kv_heads: int = Field(description="Key-value heads: n_heads for multi-head attention, fewer for grouped-query "
                                        "attention (each serves n_heads / n_kv_heads query heads), 1 for multi-query.")
    positions: Literal["learned", "rope", "alibi", "none"] = Field(
        description="How the model knows positions: a learned table added to the embeddings (BERT, GPT-2), RoPE "
                    "rotating each head's q and k (the Llama family), ALiBi, or none.")
    window: int | None = Field(description="The sliding window: a query sees only itself and the window - 1 keys "
                                           "before it (Mistral); null: no window.")
    window_layers: list[int] | None = Field(description="The layers that have the window when only some do (Gemma 2's "
                                                  "local layers, Qwen2's from max_window_layers on); null: every "
                                                  "layer when there is a window.")
    max_tokens: int
    dtype: Literal["float32", "bfloat16"] = Field(
        description="What the weights are kept and computed in (attnscope serve --dtype): float32, or bfloat16 (maps "
                    "up to a few hundredths from float32's). Every answer is float32 either way.")
    causal: bool = Field(description="Each token attends only to itself and the tokens before it (GPT-2).")
    pairs: bool = Field(description="Takes a second segment (text_pair).")
    lm_head: bool = Field(description="Has a language-model head: POST /api/v1/lens works for it.")
    local: bool = Field(description="Loaded from a checkpoint directory named by --model / ATTNSCOPE_MODEL_PATHS.")
    path: str | None = Field(None, description="The checkpoint directory; only when ATTNSCOPE_SHOW_MODEL_PATHS=true.")
    default: bool
    trained: bool = Field(False, description="Trained on this server from a learner's text (POST "
                                             "/api/v1/labs/lm/train); DELETE /api/v1/labs/lm/models/{id} removes it.")


class ModelsResponse(BaseModel):
    models: list[ModelInfo]


EDITED_DOC = "True when the request carried an `edit`: these are the maps of the edited model."


class AttentionResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    layers: list[int]
    heads: list[int]
    edited: bool = Field(False, description=EDITED_DOC)
    attention: list[list[list[list[float]]]] = Field(
        description="Axis order (layer, head, query, key); attention[i][j] is the map of layers[i], heads[j]."
    )


class TraceSteps(Steps[Matrix]):
    """The steps of multi-head attention in order; per-head stacks are (head, query, ...)."""

    input: Matrix = Field(description="N x d_model: the hidden state entering the layer's attention.")


class BlockStep(BaseModel):
    name: str = Field(description="The array in `arrays` this step makes (one of model/steps.py's BLOCK_STEPS).")
    caption_key: str = Field(description="The UI dictionary key of its caption: the step's name and, where the "
                             "step means another thing, the norms' place (`.post`, `.pre`) or the gated MLP's "
                             "(`.gated`).")
    shape: list[int] = Field(description="[N, d_model], or [N, d_ff] for the MLP's inner steps.")


class NormWeights(BaseModel):
    weight: list[float] = Field(description="γ, d_model numbers (Gemma 2's 1 + w, as the model multiplies).")
    bias: list[float] | None = Field(description="β, d_model numbers; null for RMSNorm, which has none.")


class TraceBlock(BaseModel):
    order: Literal["post", "pre"] = Field(description="`post` (BERT): x = norm(x + sublayer(x)) after the attention "
                                          "and after the MLP; `pre` (GPT-2, the Llama family): x = x + sublayer("
                                          "norm(x)), and a final norm after the last block.")
    norm: Literal["layer", "rms"] = Field(description="LayerNorm: (x − mean)/√(var + eps)·γ + β; RMSNorm: "
                                          "x/√(mean(x²) + eps)·γ.")
    eps: float = Field(description="The norms' eps.")
    activation: str = Field(description="The MLP's activation: gelu, gelu_new (tanh approximation), relu, silu.")
    gated: bool = Field(description="A gated MLP (the Llama family): act(x W_gate) ⊙ (x W_in), then W_out.")
    d_ff: int = Field(description="The MLP's inner width.")
    steps: list[BlockStep] = Field(description="The block's steps around the attention, in the order it computes "
                                   "them (the attention's own steps are in `steps`, between norm_1 and add_1 for "
                                   "`pre`, between block_input and add_1 for `post`).")
    arrays: dict[str, Matrix] = Field(description="Each step's N x width numbers, by name; and last `mlp_alone` "
                                      "(N x d_model, not a step): the MLP run again on each token's input row as a "
                                      "sequence of its own, which equals `mlp_out` row for row (within float "
                                      "rounding): the MLP works on each token alone.")
    params: dict[str, NormWeights] = Field(description="Each norm step's weights, by its name.")
    output_step: str = Field(description="The step whose array is the layer's output, transformers' "
                             "hidden_states[layer + 1] (before a pre-norm model's final norm): norm_2 or add_2.")


class RotatedHeads(BaseModel):
    q: Stack = Field(description="Each returned head's q after RoPE's rotation (h x N x d_head).")
    k: Stack = Field(description="Each returned head's k after RoPE's rotation (h x N x d_head).")


class RopeScalingInfo(BaseModel):
    kind: Literal["linear", "llama3"] = Field(description="linear: every frequency divided by `factor`; llama3: "
                                              "long wavelengths divided by `factor`, short ones kept, a smooth "
                                              "mix between.")
    factor: float
    low_freq_factor: float | None = Field(None, description="llama3 only, else null.")
    high_freq_factor: float | None = Field(None, description="llama3 only, else null.")
    original_max_positions: int | None = Field(None, description="llama3 only, else null.")


class RopeInfo(BaseModel):
    theta: float = Field(description="The base θ of the frequencies θ^(−2i/d_head).")
    scaling: RopeScalingInfo | None = Field(description="How the frequencies are stretched; null: not at all.")
    frequencies: list[float] = Field(
        description="d_head/2 numbers f_i, the model's own (float32, after the scaling): pair i of a head's q and "
                    "k, the columns i and i + d_head/2, turns by the angle p·f_i radians at position p.")


class TraceResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    layer: int
    d_model: int
    n_heads: int
    d_head: int
    heads: list[int]
    kv_head: list[int] | None = Field(
        None, description="Only for grouped-query attention (n_kv_heads < n_heads in GET /api/v1/models; absent "
                          "otherwise): the key-value head serving each of `heads`, h // (n_heads / n_kv_heads). "
                          "`split.k` and `split.v` of a head are that key-value head's, shared with the other query "
                          "heads it serves.")
    scale: float = Field(description="The factor the `scale` step multiplies the scores by: 1/√d_head, or the "
                         "model's own (Gemma 2: 1/√query_pre_attn_scalar).")
    softcap: float | None = Field(
        None, description="Only for a model that soft-caps its scores (Gemma 2; absent otherwise): the `scale` step "
                          "holds softcap·tanh(scores × scale / softcap), every value within ±softcap.")
    rope: RopeInfo | None = Field(
        None, description="Only for a model with RoPE (positions `rope` in GET /api/v1/models; absent otherwise): "
                          "its base, scaling and frequencies.")
    steps: TraceSteps
    block: TraceBlock | None = Field(None, description="The rest of the layer's block (absent when the request's "
                                     "`block` is false).")
    rotated: RotatedHeads | None = Field(
        None, description="Only for a model with RoPE (absent otherwise): q and k after the rotation, which the "
                          "scores are made of (`scores` = rotated.q · rotated.kᵀ); `steps.split` holds them before it.")


class SummaryResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    layers: list[int]
    heads: list[int]
    size: int = Field(description="M, the side of each pooled map: min(N, requested size).")
    bins: list[tuple[int, int]] = Field(description="Token range [start, end) covered by each pooled row and column.")
    edited: bool = Field(False, description=EDITED_DOC)
    attention: list[list[list[list[float]]]] = Field(
        description="Display summary, not attention weights: each cell is the largest weight in its block, so "
        "no strong weight vanishes, and rows no longer sum to 1. Axis order (layer, head, row, column)."
    )
