"""REST API v1: the Informer lab, a small Informer-style encoder (ProbSparse or full self-attention, the distilling
layer between attention layers) trained in a background job (app/jobs) to forecast a real series, its event stream,
its attention on a test window, and the series it can forecast."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Response

from model.analysis import work
from model.errors import LabInputError
from model.lab import informer
from model.nets.sparse import sample_count

from ..deps import SettingsDep
from ..jobs.informer import INFORMER, informer_watch
from ..schemas.common import INVALID_FIELD, documented_error, openapi_examples
from ..schemas.informer import (
    DEFAULT,
    InformerSeries,
    InformerSeriesList,
    InformerTrainRequest,
    InformerWatched,
    InformerWatchRequest,
)
from ..schemas.training import LabAccepted
from .jobs import (
    BODY_ERRORS,
    JOBS_BUSY,
    LATE_CLIENTS,
    RUNS_APART,
    Jobs,
    add_job_routes,
)

router = APIRouter(prefix="/api/v1/labs/informer", tags=["labs"], responses={422: INVALID_FIELD})
TRAIN = f"{router.prefix}/train"
# The most bytes one attention tensor of a forward may take (float32): the L x L weights of every head for full
# attention, the keys gathered for every query's sample (L x U x D) for ProbSparse, over a batch of
# max(batch, EVAL_BATCH) windows. The FLOP budget alone lets a job through whose first evaluation needs several GB.
ATTENTION_BYTES = 2**30


def attention_bytes(config: informer.InformerConfig, window: int) -> float:
    """The largest attention tensor of the first encoder layer at `window`, in bytes (float32)."""
    rows = max(config.batch, informer.EVAL_BATCH)
    if config.attention == "full":
        return 4.0 * rows * config.heads * window * window
    sampled = sample_count(config.factor, window)
    return 4.0 * rows * (window * sampled * config.d_model + config.heads * sampled * window)


def check_memory(config: informer.InformerConfig) -> None:
    """LabInputError on `window` when one attention tensor would be over ATTENTION_BYTES, naming the longest window
    that fits at the other settings."""
    if attention_bytes(config, config.window) <= ATTENTION_BYTES:
        return
    fits = work.largest(lambda window: attention_bytes(config, window), ATTENTION_BYTES, informer.MIN_WINDOW,
                        config.window)
    raise LabInputError("lab_setting", ("window",), f"window {config.window} would need "
                        f"{attention_bytes(config, config.window) / 2**30:.3g} GiB for one layer's {config.attention} "
                        f"attention over {max(config.batch, informer.EVAL_BATCH)} windows, more than the "
                        f"{ATTENTION_BYTES / 2**30:g} GiB a job may use; send at most {fits} (or fewer heads, a "
                        "smaller d_model)", min=max(informer.MIN_WINDOW, informer.load_series(config.series).season),
                        max=fits)

EVENTS_DOC = (
    "Server-sent events (text/event-stream), each with an `id` (its index, from 0), an `event` name and JSON "
    "`data`. First `eval` with step 0 (the untrained network), then one every `eval_every` steps and after the "
    "last: {step, steps, seconds, train_mse (the mean training-batch MSE of the scaled values since the last "
    "evaluation; null at step 0), val_mse (the validation windows' MSE in the series' units squared)}. Last, one of "
    "`done` {steps, seconds, test_mse, naive_mse, linear_mse} (on the same test windows, in the series' units "
    "squared: the network, the seasonal-naive forecast that repeats the value one season earlier, and a linear "
    "least-squares map from the window to the horizon fitted on the training windows), `cancelled` {step, seconds} "
    "or `error` {detail}; then the stream ends. " + LATE_CLIENTS
)


@router.post(
    "/train",
    status_code=202,
    response_model=LabAccepted,
    summary="Start training the Informer lab's encoder on a real series in the background",
    description=(
        "Trains a small Informer-style encoder to forecast the next `horizon` values of a series from the `window` "
        "values before them: the scaled values embedded with a fixed sinusoidal position encoding, `layers` encoder "
        "layers (self-attention, then a feed-forward, each with a residual sum and a norm) with a distilling layer "
        "between each two (a convolution, ELU and a max-pool of stride 2 that halves the length), and a head to the "
        "forecast. `attention` probsparse: in each head the u = c·⌈ln L⌉ queries with the largest sparsity measure M "
        "(max minus mean of their scores on U = c·⌈ln L⌉ sampled keys) get softmax attention, the others the mean of "
        "V; full: ordinary softmax attention. The series is split in time into training, validation and test parts, "
        "scaled with the training part's mean and deviation. Adam on random batches of training windows. Answers at "
        "once with the job id and its event stream. " + RUNS_APART + " A setting outside its range, heads that do "
        "not divide d_model, a window shorter than the series' season, a window and horizon longer than the series' "
        "training part, a horizon longer than its validation part, or a window whose attention over a batch would "
        "take more than 1 GiB is answered 422 `lab_setting` with the field in `loc` and its range in `ctx`. The "
        "same settings and seed give the same numbers."
    ),
    responses={**BODY_ERRORS, 429: JOBS_BUSY},
)
def train(
    req: Annotated[InformerTrainRequest, Body(openapi_examples=openapi_examples(InformerTrainRequest))], jobs: Jobs,
    settings: SettingsDep,
) -> LabAccepted:
    config = informer.InformerConfig(**req.model_dump())
    check_memory(config)
    work.check_job(lambda steps: work.informer(config.window, config.horizon, config.layers, config.d_model,
                                               config.factor, config.attention, config.batch, steps),
                   config.steps, settings.work_budget, "steps", f"training the Informer lab for {config.steps} steps")
    job = jobs.start(INFORMER, config)
    return LabAccepted(job=job.id, events=f"{TRAIN}/{job.id}/events")


add_job_routes(router, INFORMER, "/train", "An Informer training job", EVENTS_DOC)


@router.post(
    "/watch",
    response_model=InformerWatched,
    summary="A job's forecast of one test window, with every attention layer's weights",
    description=(
        "Runs the job's network as it was after its latest evaluation (so it works while the job trains; step 0: "
        "untrained) on test window `index`: the window's values, the true horizon, the network's and the "
        "seasonal-naive forecasts (the series' units), and for each attention layer its length (L, then halved by "
        "each distilling layer) and every head's weights (query by key, 4 decimals); with ProbSparse also each "
        "query's sparsity measure M and the active queries (the lazy ones' rows are the mean's 1/length; the keys "
        "are sampled from a fixed seed, so the same window gives the same answer). An index beyond the test windows "
        "is answered 422 `lab_setting` with `loc` [body, index] and the range in `ctx`."
    ),
    responses={**BODY_ERRORS, 404: documented_error(
        "`job` is not an Informer job of this server (`unknown_job`) or is no longer kept (`job_evicted`: train "
        "again)."
    )},
)
def watch(req: Annotated[InformerWatchRequest, Body(openapi_examples=openapi_examples(InformerWatchRequest))],
          jobs: Jobs) -> Response:
    return Response(informer_watch(jobs.get(INFORMER, req.job, "body"), req.index), media_type="application/json")


def _series(name: str, window: int, horizon: int) -> InformerSeries:
    series = informer.load_series(name)
    try:
        windows: int | None = informer.test_window_count(informer.InformerConfig(series=name, window=window,
                                                                                 horizon=horizon))
    except LabInputError:  # the window and horizon do not fit this series
        windows = None
    return InformerSeries(name=name, unit=series.unit, season=series.season, step_label=series.step_label,
                          values=len(series.values), first=float(series.times[0]), last=float(series.times[-1]),
                          test_windows=windows)


@router.get(
    "/series",
    response_model=InformerSeriesList,
    summary="The series the Informer lab forecasts, with their test windows at a window and horizon",
    description=(
        "For each series: its name, unit, season (values per season), what one step is, how many values it has, "
        "its first and last times, and how many test windows a job with this `window` and `horizon` has (null when "
        "they do not fit that series), the range of /watch's `index`."
    ),
)
def series(
    window: Annotated[int, Query(ge=informer.MIN_WINDOW, le=informer.MAX_WINDOW,
                                 description="L, as the job's.")] = DEFAULT.window,
    horizon: Annotated[int, Query(ge=1, le=informer.MAX_HORIZON,
                                  description="H, as the job's.")] = DEFAULT.horizon,
) -> InformerSeriesList:
    return InformerSeriesList(window=window, horizon=horizon,
                              series=[_series(name, window, horizon) for name in informer.SERIES])
