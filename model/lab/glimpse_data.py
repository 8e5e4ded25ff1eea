"""The glimpse lab's data (model/lab/glimpse.py): canvases of handwritten digits to be read in reading order.

The digits are scikit-learn's 8 × 8 handwritten digits (1,797 images, 16 grey levels 0..16, from the UCI optical
recognition set), read from the gzipped CSV file the package ships (sklearn/datasets/data/digits.csv.gz: 64 pixel
values then the label per row). The file is found with importlib.util.find_spec, which locates the package without
importing it (sklearn, scipy and their start-up stay out of the server), and read once per process on first use.
Why the dependency: real handwriting, with the variation that makes reading it a task, in a small, well-kept
package that installs offline from a wheel; nothing is downloaded at run time, and 8 × 8 images keep a CNN on
24 × 24 canvases cheap enough to train live on one CPU thread.

A canvas is a GRID × GRID grid of CELL × CELL cells (24 × 24 pixels, values 0..16). It holds 1 to MAX_DIGITS digit
images (the count uniform), each in its own cell (the cells a uniform random subset); the other cells are blank.
Its target is the digits in reading order (cells row by row, each row left to right: cell r·GRID + c), then END.

The 1,797 images are split first (`split`: a seeded permutation, TRAIN_SHARE / VALIDATION_SHARE / the rest for
test), so training, validation and test canvases are built from disjoint digit images; within a split an image
may appear on many canvases and more than once on one.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GRID, CELL = 3, 8
SIDE = GRID * CELL  # 24 pixels
REGIONS = GRID * GRID  # 9 cells: one annotation, one attention weight each
MAX_DIGITS = 4
MAX_TARGET = MAX_DIGITS + 1  # the longest target: four digits and END
END, START = 10, 11  # tokens after the digits 0..9: END is an output, START only an input
OUTPUTS = 11  # the decoder's classes: 0..9 and END
PAD = -100  # target positions after END (cross-entropy's ignore_index)
MAX_PIXEL = 16
IMAGES = 1797
TRAIN_SHARE, VALIDATION_SHARE = 0.70, 0.15  # the test images are the remaining 0.15


def digits_file() -> Path:
    """The CSV file scikit-learn ships with its digits, located without importing the package."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the glimpse lab reads scikit-learn's digits; install scikit-learn>=1.4")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "datasets" / "data" / "digits.csv.gz"
        if path.is_file():
            return path
    raise RuntimeError("scikit-learn is installed without sklearn/datasets/data/digits.csv.gz")


@functools.lru_cache(maxsize=1)
def digits() -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 images (N, 8, 8) uint8 (0..16) and their labels (N,) int64 (0..9), in the file's order."""
    with gzip.open(digits_file(), "rt", encoding="ascii") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)  # (N, 65)
    images = table[:, :-1].reshape(-1, CELL, CELL).astype(np.uint8)  # (N, 8, 8)
    images.setflags(write=False)
    labels = table[:, -1].copy()  # (N,)
    labels.setflags(write=False)
    return images, labels


@dataclass(frozen=True)
class Split:
    """Indices into `digits()` of each part's images; the three are disjoint and cover all 1,797."""

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray


def split(seed: int) -> Split:
    """A seeded permutation of the images, cut at TRAIN_SHARE and TRAIN_SHARE + VALIDATION_SHARE."""
    order = np.random.default_rng([seed, 0]).permutation(IMAGES)  # (N,)
    train_end = round(TRAIN_SHARE * IMAGES)
    validation_end = train_end + round(VALIDATION_SHARE * IMAGES)
    return Split(np.sort(order[:train_end]), np.sort(order[train_end:validation_end]), np.sort(order[validation_end:]))


@dataclass(frozen=True)
class Canvases:
    """N canvases. Per canvas, slots 0..count−1 hold its digits in reading order; later slots hold −1."""

    pixels: np.ndarray  # (N, SIDE, SIDE) uint8, 0..16
    counts: np.ndarray  # (N,) int64, 1..MAX_DIGITS
    cells: np.ndarray  # (N, MAX_DIGITS) int64: the occupied cells, ascending (reading order)
    digits: np.ndarray  # (N, MAX_DIGITS) int64: the digit in each of those cells
    images: np.ndarray  # (N, MAX_DIGITS) int64: its image's index into `digits()`

    def __len__(self) -> int:
        return len(self.counts)

    def targets(self) -> np.ndarray:
        """(N, MAX_TARGET) int64: the digits, END, then PAD."""
        out = np.full((len(self), MAX_TARGET), PAD, dtype=np.int64)  # (N, MAX_TARGET)
        out[:, :MAX_DIGITS] = np.where(self.digits >= 0, self.digits, PAD)
        out[np.arange(len(self)), self.counts] = END
        return out

    def sequence(self, i: int) -> list[int]:
        """Canvas i's digits in reading order (END left out)."""
        return [int(d) for d in self.digits[i, : self.counts[i]]]

    def take(self, rows: np.ndarray | list[int]) -> Canvases:
        index = np.asarray(rows, dtype=np.int64)
        return Canvases(self.pixels[index], self.counts[index], self.cells[index], self.digits[index],
                        self.images[index])


def draw(pool: np.ndarray, count: int, rng: np.random.Generator) -> Canvases:
    """`count` canvases from the images `pool` (indices into `digits()`): per canvas a digit count uniform in
    1..MAX_DIGITS, that many distinct cells uniform among the REGIONS, and an image drawn uniformly from the pool
    for each (with replacement)."""
    images, labels = digits()
    counts = rng.integers(1, MAX_DIGITS + 1, size=count)  # (N,)
    order = rng.random((count, REGIONS)).argsort(axis=1)[:, :MAX_DIGITS]  # (N, 4): distinct random cells
    slot = np.arange(MAX_DIGITS)[None, :]  # (1, 4)
    used = slot < counts[:, None]  # (N, 4)
    cells = np.sort(np.where(used, order, REGIONS), axis=1)  # (N, 4): the used cells ascending, unused last
    cells = np.where(used, cells, -1)
    chosen = np.where(used, pool[rng.integers(0, len(pool), size=(count, MAX_DIGITS))], -1)  # (N, 4)
    digit = np.where(used, labels[np.maximum(chosen, 0)], -1)  # (N, 4)
    grid = np.zeros((count, GRID, GRID, CELL, CELL), dtype=np.uint8)  # (N, row, col, 8, 8)
    rows, slots = np.nonzero(used)
    grid[rows, cells[rows, slots] // GRID, cells[rows, slots] % GRID] = images[chosen[rows, slots]]
    pixels = grid.transpose(0, 1, 3, 2, 4).reshape(count, SIDE, SIDE)  # (N, 24, 24)
    return Canvases(pixels, counts.astype(np.int64), cells.astype(np.int64), digit.astype(np.int64),
                    chosen.astype(np.int64))
