"""Request and event models of the glimpse lab (/api/v1/labs/glimpse): a CNN encoder and a GRU decoder that reads
1-4 handwritten digits off a 3 × 3 canvas, attending over the 9 cells softly or by picking one, trained four ways."""

from __future__ import annotations

from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from model.lab import glimpse

from .common import Matrix, StrictRequest, examples

DEFAULT = glimpse.GlimpseConfig()
MethodName = Literal["soft", "reinforce", "gumbel", "straight_through"]  # glimpse_net.METHODS


class GlimpseTrainRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {},
        {"method": "reinforce", "steps": 600, "seed": 1},
        {"method": "gumbel", "steps": 300, "batch": 32, "tau_start": 1.0, "tau_end": 0.3, "seed": 2},
    ))

    method: MethodName = Field(cast(MethodName, DEFAULT.method), description="soft: the weighted sum of every "
                               "cell's annotation; reinforce: one cell sampled from the attention, its scores "
                               "trained by the score-function gradient; gumbel: the Gumbel-softmax relaxed sample "
                               "as the weights; straight_through: one cell forward, the relaxed sample's gradient "
                               "backward. When evaluating, the hard methods glimpse the most likely cell.")
    steps: int = Field(DEFAULT.steps, ge=1, le=glimpse.MAX_STEPS, description="Adam steps, each on a batch of fresh "
                       "training canvases.")
    seed: int = Field(DEFAULT.seed, ge=0, le=glimpse.MAX_SEED, description="Draws the digit split, the canvases, the "
                      "initial weights and every sample: the same settings and seed give the same events.")
    baseline: bool = Field(DEFAULT.baseline, description="reinforce only: subtract a moving average of each step's "
                           "reward (b_t ← 0.9·b_t + 0.1·mean r_t) from the reward; false: b_t = 0.")
    batch: int = Field(DEFAULT.batch, ge=1, le=glimpse.MAX_BATCH, description="Canvases per step.")
    lr: float = Field(DEFAULT.lr, gt=0, le=glimpse.MAX_LR, allow_inf_nan=False, description=f"Adam's learning rate "
                      f"at the start (it falls along a half cosine to a tenth), above 0, at most {glimpse.MAX_LR}.")
    eval_every: int = Field(DEFAULT.eval_every, ge=1, le=glimpse.MAX_STEPS, description="Steps between two `eval` "
                            "events.")
    channels: int = Field(DEFAULT.channels, ge=1, le=glimpse.MAX_CHANNELS, description="C, the first convolution's "
                          "channels (the second has 2C).")
    hidden: int = Field(DEFAULT.hidden, ge=glimpse.MIN_HIDDEN, le=glimpse.MAX_HIDDEN,
                        description="The GRU decoder's state width.")
    entropy_bonus: float = Field(DEFAULT.entropy_bonus, ge=0, le=glimpse.MAX_ENTROPY_BONUS, allow_inf_nan=False,
                                 description="reinforce only: β, the weight of the attention's entropy subtracted "
                                 "from the surrogate loss (keeps it exploring).")
    tau_start: float = Field(DEFAULT.tau_start, ge=glimpse.MIN_TAU, le=glimpse.MAX_TAU, allow_inf_nan=False,
                             description="gumbel and straight_through: the temperature at step 1.")
    tau_end: float = Field(DEFAULT.tau_end, ge=glimpse.MIN_TAU, le=glimpse.MAX_TAU, allow_inf_nan=False,
                           description="The temperature at the last step (annealed geometrically).")


class GlimpseWatched(BaseModel):
    canvas: int = Field(description="The canvas's index among the job's test canvases.")
    pixels: list[list[int]] = Field(description="24 × 24 grey levels 0..16, row by row.")
    target: list[int] = Field(description="The digits on the canvas in reading order.")
    regions: Matrix = Field(description="T × 9: at each greedy decoding step (the END step included), the weights "
                            "over the cells in reading order (cell 3·row + column), 4 decimals; one-hot for the hard "
                            "methods (the most likely cell).")
    output: list[int] = Field(description="The digits the network emitted, END left out.")


class GlimpseEvalEvent(BaseModel):
    """Data of an `eval` event."""

    step: int = Field(description="Steps done; 0 is the untrained network.")
    steps: int
    seconds: float = Field(description="Seconds since the job started training.")
    loss: float | None = Field(description="The mean training cross-entropy (nats per target token) since the last "
                               "evaluation; null at step 0.")
    eval_loss: float = Field(description="The validation canvases' teacher-forced cross-entropy.")
    accuracy: float = Field(description="The share of the validation canvases read exactly (every digit and END).")
    digit_accuracy: float = Field(description="The share of their digits read right at their position.")
    entropy: float = Field(description="The attention's mean entropy over the cells, nats (ln 9 ≈ 2.197 at most).")
    grad_variance: float = Field(description="The variance of the method's gradient estimate for the attention's "
                                 "W, U, v across 16 repeated samples at the same weights on 32 fixed training "
                                 "canvases, averaged over the parameters (0 for soft attention: nothing is sampled).")
    grad_mean_square: float = Field(description="The squared mean gradient beside it, averaged the same way.")
    tau: float | None = Field(description="The temperature of the last step (gumbel, straight_through); null else.")
    glimpses: list[GlimpseWatched] = Field(description="The first 4 test canvases read greedily.")


class GlimpseDoneEvent(BaseModel):
    steps: int
    seconds: float
    test_accuracy: float = Field(description="The share of the job's 500 test canvases read exactly.")
    digit_accuracy: float = Field(description="The share of their digits read right at their position.")
