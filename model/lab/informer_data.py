"""The Informer lab's series (model/lab/informer.py), their split in time, windows, scaling and the two baselines.

The series are the CSV files statsmodels ships with its datasets (read with importlib.resources and the csv module,
never downloaded; pandas and statsmodels.api are not imported):

* co2: weekly atmospheric CO₂ at Mauna Loa in ppm, March 1958 to December 2001 (2284 weeks). The weeks without a
  measurement (blank in the file) are filled by linear interpolation between their neighbours. Season 52 weeks.
* sunspots: the yearly sunspot numbers 1700-2008 (309 years). Season 11 years (the solar cycle's mean length).

Split in time: the first TRAIN_SHARE of the values are the training part, the next VALIDATION_SHARE the validation
part, the rest the test part. A window is `window` values followed by the `horizon` values it forecasts; a part's
windows are those whose forecast lies wholly inside the part (their history may reach back into an earlier part,
as values known before the forecast starts; never into a later one), one per start position (stride 1).

Scaling: (value − mean) / std with the mean and standard deviation of the training part only.

Baselines, on the same windows:
* seasonal naive: each forecast point gets the value k seasons before it, k the fewest whole seasons that reach
  back before the forecast's start (one season when horizon ≤ season): the last season, repeated.
* linear: least squares from the window's scaled values (and a constant) to its horizon's, fitted on the training
  windows with a ridge of RIDGE (the penalty on the weights, not on the constant), solved by numpy's lstsq.
"""

from __future__ import annotations

import csv
import datetime
import functools
import io
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources

import numpy as np
import torch

TRAIN_SHARE, VALIDATION_SHARE = 0.7, 0.1  # the test part is the remaining 0.2
RIDGE = 1e-2  # the linear baseline's penalty on the squared weights (scaled units)
SEASONS = {"co2": 52, "sunspots": 11}
_FILES = {"co2": ("co2", "co2.csv"), "sunspots": ("sunspots", "sunspots.csv")}


@dataclass(frozen=True)
class Series:
    """One series: `values` (float64) at `times` (decimal years, float64), one value per `step_label`."""

    name: str
    unit: str
    season: int
    step_label: str  # "week" | "year"
    times: np.ndarray
    values: np.ndarray


def _csv_rows(folder: str, file: str) -> list[list[str]]:
    text = (resources.files("statsmodels") / "datasets" / folder / file).read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    return rows[1:]  # the header


def _decimal_year(day: datetime.date) -> float:
    start = datetime.date(day.year, 1, 1)
    length = (datetime.date(day.year + 1, 1, 1) - start).days
    return day.year + (day - start).days / length


@functools.cache
def load_series(name: str) -> Series:
    """The named series (a KeyError for another name), read once from statsmodels' CSV file."""
    folder, file = _FILES[name]
    rows = _csv_rows(folder, file)
    if name == "co2":
        days = [datetime.datetime.strptime(row[0], "%Y%m%d").date() for row in rows]
        times = np.array([_decimal_year(d) for d in days])
        raw = np.array([float(row[1]) if row[1].strip() else math.nan for row in rows])
        known = ~np.isnan(raw)
        position = np.arange(len(raw), dtype=np.float64)
        values = np.interp(position, position[known], raw[known])  # the gaps, linearly
        return Series("co2", "ppm", SEASONS["co2"], "week", times, values)
    times = np.array([float(row[0]) for row in rows])
    values = np.array([float(row[1]) for row in rows])
    return Series("sunspots", "sunspot number", SEASONS["sunspots"], "year", times, values)


class SeriesTable(Mapping[str, Series]):
    """The series by name; each is read at its first use (load_series), not when the module is imported."""

    def __getitem__(self, name: str) -> Series:
        if name not in _FILES:
            raise KeyError(name)
        return load_series(name)

    def __iter__(self) -> Iterator[str]:
        return iter(_FILES)

    def __len__(self) -> int:
        return len(_FILES)


SERIES: Mapping[str, Series] = SeriesTable()


def part_bounds(length: int) -> tuple[int, int]:
    """(train_end, validation_end): the training part is [0, train_end), validation [train_end, validation_end),
    test [validation_end, length)."""
    return int(length * TRAIN_SHARE), int(length * (TRAIN_SHARE + VALIDATION_SHARE))


def part_starts(length: int, window: int, horizon: int, part: str) -> np.ndarray:
    """The start positions of a part's windows ("train", "validation" or "test"), ascending (int64): every start s
    with s ≥ 0 whose forecast [s + window, s + window + horizon) lies inside the part."""
    train_end, validation_end = part_bounds(length)
    first, end = {"train": (0, train_end), "validation": (train_end, validation_end),
                  "test": (validation_end, length)}[part]
    low = max(first - window, 0)  # the forecast starts at first or later
    high = end - window - horizon  # the forecast ends at end or earlier
    return np.arange(low, high + 1, dtype=np.int64) if high >= low else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Scaling:
    """(value − mean) / std, fitted on the training part."""

    mean: float
    std: float

    def scale(self, values: np.ndarray) -> np.ndarray:
        scaled: np.ndarray = (values - self.mean) / self.std
        return scaled

    def unscale(self, values: np.ndarray) -> np.ndarray:
        unscaled: np.ndarray = values * self.std + self.mean
        return unscaled


def fit_scaling(values: np.ndarray) -> Scaling:
    """The scaling of the training part's values (the first part_bounds(len(values))[0])."""
    train = values[: part_bounds(len(values))[0]]
    return Scaling(float(train.mean()), float(train.std()))


def windows(values: np.ndarray, starts: np.ndarray, window: int, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, window) histories and (N, horizon) forecast truths of the windows starting at `starts`."""
    history: np.ndarray = values[starts[:, None] + np.arange(window)]  # (N, L)
    truth: np.ndarray = values[starts[:, None] + window + np.arange(horizon)]  # (N, H)
    return history, truth


def seasonal_naive(values: np.ndarray, starts: np.ndarray, window: int, horizon: int, season: int) -> np.ndarray:
    """(N, H): forecast point t = s + window + j gets values[t − k·season], k = j // season + 1."""
    j = np.arange(horizon)
    back = (j // season + 1) * season  # (H,)
    naive: np.ndarray = values[starts[:, None] + window + j - back]  # (N, H)
    return naive


def fit_linear(history: np.ndarray, truth: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """(window + 1, H) least-squares weights (the last row the constant) from the histories to the truths,
    with the ridge penalty on the window's weights: lstsq of [X 1; √ridge·I 0] against [Y; 0]."""
    n, width = history.shape
    design = np.concatenate([history, np.ones((n, 1))], axis=1)  # (N, L + 1)
    penalty = np.concatenate([math.sqrt(ridge) * np.eye(width), np.zeros((width, 1))], axis=1)  # (L, L + 1)
    target = np.concatenate([truth, np.zeros((width, truth.shape[1]))])  # (N + L, H)
    weights: np.ndarray = np.linalg.lstsq(np.concatenate([design, penalty]), target, rcond=None)[0]
    return weights


def linear_forecast(weights: np.ndarray, history: np.ndarray) -> np.ndarray:
    """(N, H): the fitted linear model's forecast of the histories (N, window)."""
    forecast: np.ndarray = history @ weights[:-1] + weights[-1]
    return forecast


@dataclass(frozen=True)
class Prepared:
    """A series, its scaling, its scaled values (float32, (N,)) and the windows' starts per part."""

    series: Series
    scaling: Scaling
    scaled: torch.Tensor
    starts: dict[str, np.ndarray]


def prepare(name: str, window: int, horizon: int) -> Prepared:
    """The named series' scaling, scaled values and the starts of its training, validation and test windows."""
    series = load_series(name)
    scaling = fit_scaling(series.values)
    scaled = torch.from_numpy(scaling.scale(series.values)).float()  # (N,)
    starts = {part: part_starts(len(series.values), window, horizon, part) for part in ("train", "validation", "test")}
    return Prepared(series, scaling, scaled, starts)


def gather(scaled: torch.Tensor, starts: np.ndarray, window: int, horizon: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, window) histories and (N, horizon) truths of the windows starting at `starts`, from scaled (float32)."""
    rows = scaled[torch.from_numpy(starts)[:, None] + torch.arange(window + horizon)]  # (N, L + H)
    return rows[:, :window], rows[:, window:]
