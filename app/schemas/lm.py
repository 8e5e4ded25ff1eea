"""Request, answer and event models of the model grown from a learner's own text (/api/v1/labs/lm): a small
GPT-2-shaped character-level network (model/lab/lm.py) trained in a background job, then served as a model."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from model.lab.lm import MAX_CONTEXT, MAX_D_MODEL, MAX_HEADS, MAX_LAYERS, MAX_SEED, MAX_STEPS, MIN_CHARS, LmSettings

from .common import StrictRequest, examples

# The settings' ranges are model/lab/lm.py's (LmSettings checks them again, with the rule between fields: heads
# dividing d_model); the server's work budget bounds steps x size (app/routes/lm.py).
MIN_CONTEXT, MIN_D_MODEL = 8, 8
MAX_EVAL_EVERY = MAX_STEPS
DEFAULT = LmSettings()
EXAMPLE_TEXT = "注意力机制让模型学会聚焦重要的信息。" * 120  # 2,160 characters: above the shortest text accepted
SETTINGS_DOC = "Omitted: the default (model/lab/lm.py LmSettings, sized for a 2-core machine), "


class LmSettingsFields(StrictRequest):
    """The network's and the training's settings; each omitted one takes its default."""

    steps: int | None = Field(None, ge=1, le=MAX_STEPS, description="AdamW steps, each on a batch of windows of "
                              "the training text. " + SETTINGS_DOC + f"{DEFAULT.steps}.")
    seed: int | None = Field(None, ge=0, le=MAX_SEED, description="Draws the initial weights, every batch and the "
                             "samples: the same text, seed and settings give the same model. " + SETTINGS_DOC
                             + f"{DEFAULT.seed}.")
    context: int | None = Field(None, ge=MIN_CONTEXT, le=MAX_CONTEXT, description="Characters the network sees at "
                                "once (its positions, n_positions). " + SETTINGS_DOC + f"{DEFAULT.context}.")
    layers: int | None = Field(None, ge=1, le=MAX_LAYERS, description="Transformer blocks. " + SETTINGS_DOC
                              + f"{DEFAULT.layers}.")
    heads: int | None = Field(None, ge=1, le=MAX_HEADS, description="Heads per layer; must divide d_model. "
                              + SETTINGS_DOC + f"{DEFAULT.heads}.")
    d_model: int | None = Field(None, ge=MIN_D_MODEL, le=MAX_D_MODEL, description="The residual stream's width, a "
                                "multiple of heads. " + SETTINGS_DOC + f"{DEFAULT.d_model}.")
    eval_every: int | None = Field(None, ge=1, le=MAX_EVAL_EVERY, description="Steps between two evaluations (an "
                                   "`eval` event with losses and a sample). " + SETTINGS_DOC
                                   + f"{DEFAULT.eval_every}.")


class LmTrainRequest(LmSettingsFields):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": EXAMPLE_TEXT, "steps": 60, "seed": 0, "context": 32, "layers": 2, "heads": 2, "d_model": 32},
    ))

    text: str = Field(min_length=MIN_CHARS, description=f"The text to learn: at least {MIN_CHARS:,} characters, at "
                      "most the server's upload cap in bytes of UTF-8 (ATTNSCOPE_LM_MAX_UPLOAD_BYTES, else 413 "
                      "`lm_text_too_large`), plain text (a control character other than tab and line breaks: 422 "
                      "`lab_setting`). It stays on the server's machine; only its SHA-256 is kept with the model.")


class LmEvalEvent(BaseModel):
    step: int
    steps: int
    seconds: float
    train_loss: float = Field(description="Mean loss of the training batches since the last evaluation, nats per "
                              "character.")
    val_loss: float = Field(description="Loss on the held-out tail of the text (its last 10 %), nats per character.")
    unigram_entropy: float = Field(description="The text's character entropy, nats: what guessing by frequency "
                                   "alone scores.")
    bigram_entropy: float = Field(description="The text's next-character entropy given the one before, nats: what "
                                  "a table of pairs scores (on the text itself).")
    sample: str = Field(description="Text the network generated at this step, from the seed.")


class HeadRole(BaseModel):
    layer: int
    head: int
    previous_token: float = Field(description="Mean weight on the character just before, on a repeated random "
                                  "sequence R R (model/analysis/circuits.py).")
    induction: float = Field(description="Mean weight on the character after the same character's earlier "
                             "occurrence, over the second R (model/analysis/circuits.py).")
    positional: float = Field(description="1 − the mean total-variation distance between a head's attention rows "
                              "on different random texts and their mean at the same position: 1 when its weights "
                              "depend on positions only, never on the characters.")
    roles: list[Literal["previous_token", "induction", "positional"]] = Field(
        description="The scores over their thresholds (`thresholds` of the done event).")


class LmDoneEvent(BaseModel):
    model: str = Field(description="The trained model's id: listed in GET /api/v1/models with `trained` true, "
                       "usable by every route that takes `model`.")
    steps: int
    seconds: float
    val_loss: float
    heads: list[HeadRole]
    thresholds: dict[str, float]


class TrainedModel(BaseModel):
    id: str
    name: str
    n_layers: int
    n_heads: int
    d_model: int
    context: int = Field(description="The most characters it reads at once.")
    vocab_size: int = Field(description="Its characters, the unknown token included.")
    characters: int | None = Field(description="Characters of the text it was trained on.")
    text_sha256: str | None = Field(description="SHA-256 of that text's UTF-8 (the text itself is not kept).")
    final_val_loss: float | None
    unigram_entropy: float | None
    bigram_entropy: float | None
    settings: dict[str, float | int | str] | None = Field(description="The training's settings.")
    created: float = Field(description="When it was saved, seconds since the epoch.")


class TrainedModels(BaseModel):
    models: list[TrainedModel] = Field(description="Newest first.")
    keep: int = Field(description="How many the server keeps (ATTNSCOPE_LM_KEEP); training one more removes the "
                      "oldest.")
    uploads: bool = Field(description="Whether the server accepts texts to train on (ATTNSCOPE_LM_UPLOADS).")
    max_upload_bytes: int = Field(description="The largest text it accepts, bytes of UTF-8.")
    min_chars: int = Field(description="The shortest text it accepts, characters.")
