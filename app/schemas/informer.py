"""Request, response and event models of the Informer lab (/api/v1/labs/informer): a small Informer-style encoder
(ProbSparse or full self-attention, the distilling layer between attention layers) forecasting a real series."""

from __future__ import annotations

from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from model.lab import informer

from .common import Matrix, StrictRequest, examples
from .iris import JobId

DEFAULT = informer.InformerConfig()
SeriesName = Literal["co2", "sunspots"]  # informer.SERIES
AttentionName = Literal["probsparse", "full"]
EXAMPLE_JOB = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


class InformerTrainRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {},
        {"attention": "full", "seed": 1},
        {"series": "sunspots", "window": 48, "horizon": 11, "steps": 300, "factor": 3, "seed": 2},
    ))

    series: SeriesName = Field(cast(SeriesName, DEFAULT.series), description="co2: weekly CO₂ at Mauna Loa in ppm "
                               "(1958–2001, season 52 weeks); sunspots: yearly sunspot numbers (1700–2008, season "
                               "11 years). Both ship with statsmodels.")
    attention: AttentionName = Field(cast(AttentionName, DEFAULT.attention), description="probsparse: each head "
                                     "gives softmax attention to the u = c·⌈ln L⌉ queries with the largest sparsity "
                                     "measure M and the mean of V to the others; full: every query attends.")
    window: int = Field(DEFAULT.window, ge=informer.MIN_WINDOW, le=informer.MAX_WINDOW,
                        description="L, the values the network reads: at least the series' season, and the "
                        "series' training part must hold a window and its horizon (else 422 `lab_setting` with the "
                        "range in `ctx`).")
    horizon: int = Field(DEFAULT.horizon, ge=1, le=informer.MAX_HORIZON, description="H, the values it forecasts: "
                         "at most the values of the series' validation part.")
    layers: int = Field(DEFAULT.layers, ge=1, le=informer.MAX_LAYERS, description="Encoder attention layers, a "
                        "distilling layer (convolution, ELU, max-pool halving the length) between each two.")
    heads: int = Field(DEFAULT.heads, ge=1, le=informer.MAX_HEADS, description="Heads per attention layer; must "
                       "divide d_model.")
    d_model: int = Field(DEFAULT.d_model, ge=1, le=informer.MAX_D_MODEL,
                         description="The width of each position's vector; a multiple of heads.")
    factor: int = Field(DEFAULT.factor, ge=1, le=informer.MAX_FACTOR, description="ProbSparse's c: U = c·⌈ln L⌉ "
                        "keys sampled per query, u = c·⌈ln L⌉ active queries per head (at most L).")
    steps: int = Field(DEFAULT.steps, ge=1, le=informer.MAX_STEPS, description="Adam steps, each on a random "
                       "batch of training windows.")
    batch: int = Field(DEFAULT.batch, ge=1, le=informer.MAX_BATCH, description="Windows per step.")
    lr: float = Field(DEFAULT.lr, gt=0, le=informer.MAX_LR, allow_inf_nan=False,
                      description=f"Adam's learning rate, above 0, at most {informer.MAX_LR}.")
    seed: int = Field(DEFAULT.seed, ge=0, le=informer.MAX_SEED, description="Draws the initial weights, every "
                      "batch and the sampled keys while training: the same settings and seed give the same events.")
    eval_every: int = Field(DEFAULT.eval_every, ge=1, le=informer.MAX_STEPS,
                            description="Steps between two `eval` events.")


class InformerEvalEvent(BaseModel):
    """Data of an `eval` event."""

    step: int = Field(description="Steps done; 0 is the untrained network.")
    steps: int
    seconds: float = Field(description="Seconds since the job started training.")
    train_mse: float | None = Field(description="The mean training-batch MSE (scaled values) since the last "
                                    "evaluation; null at step 0.")
    val_mse: float = Field(description="The validation windows' MSE in the series' own units squared (ppm², "
                           "sunspots²).")


class InformerDoneEvent(BaseModel):
    steps: int
    seconds: float
    test_mse: float = Field(description="The network's MSE on the test windows, in the series' units squared.")
    naive_mse: float = Field(description="The seasonal-naive forecast's MSE on the same windows: each value "
                             "forecast as the value one season before it.")
    linear_mse: float = Field(description="A linear least-squares map from the window to the horizon, fitted on the "
                              "training windows, on the same windows.")


class InformerWatchRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples({"job": EXAMPLE_JOB, "index": 0},
                                                         {"job": EXAMPLE_JOB, "index": 5}))

    job: JobId
    index: int = Field(ge=0, le=100_000, description="A test window, 0 to the job's test windows − 1 (GET "
                       "/api/v1/labs/informer/series counts them); beyond them 422 `lab_setting` with the range in "
                       "`ctx`.")


class InformerLayer(BaseModel):
    length: int = Field(description="The sequence length this attention layer sees: L, then ⌈L/2⌉ after each "
                        "distilling layer.")
    weights: list[Matrix] = Field(description="heads x length x length: the weights used (query by key, rounded to 4 "
                                  "decimals; each row sums to 1; a lazy query's row is 1/length everywhere).")
    measure: Matrix | None = Field(description="heads x length: ProbSparse's sparsity measure M of each query; null "
                                   "for full attention.")
    active: list[list[int]] | None = Field(description="heads x u: the active queries of each head, ascending; null "
                                           "for full attention.")


class InformerWatched(BaseModel):
    step: int = Field(description="The step after which the parameters were taken (0: untrained). While the job "
                      "trains, its latest evaluation.")
    series: str
    attention: str
    index: int = Field(description="The test window.")
    windows: int = Field(description="The job's test windows (index runs from 0 to windows − 1).")
    start: int = Field(description="The window's first position in the series.")
    times: list[float] = Field(description="window + horizon decimal years: the window's, then the horizon's.")
    history: list[float] = Field(description="The window's values (the series' units).")
    truth: list[float] = Field(description="The horizon's true values.")
    forecast: list[float] = Field(description="The network's forecast of the horizon.")
    naive: list[float] = Field(description="The seasonal-naive forecast: the value one season before each.")
    layers: list[InformerLayer]


class InformerSeries(BaseModel):
    name: str
    unit: str
    season: int = Field(description="Values per season: the seasonal-naive forecast looks this far back.")
    step_label: str = Field(description="What one step of the series is: week or year.")
    values: int = Field(description="The series' values.")
    first: float = Field(description="The first value's time, decimal years.")
    last: float = Field(description="The last value's time, decimal years.")
    test_windows: int | None = Field(description="Test windows at the asked window and horizon; null when they do "
                                     "not fit this series.")


class InformerSeriesList(BaseModel):
    window: int
    horizon: int
    series: list[InformerSeries]
