// The colour scales of every attention picture, so that the canvases (overview grid, head view) and
// the Plotly figures show the same colour for the same value. Pure: no DOM.
//
// Exports for figures and views:
//   colormap(v) / sequential(v)       v in [0, 1] -> [r, g, b]: viridis (colour-blind safe, dark = 0)
//   diverging(v)                      v in [-1, 1] -> [r, g, b]: blue (−) – white (0) – red (+)
//   PLOTLY_SEQUENTIAL, PLOTLY_DIVERGING   the same two scales as Plotly colorscale arrays
//   plotlyColorscale({gamma})         PLOTLY_SEQUENTIAL, or with a gamma the colour of v is that of v^gamma
//                                     (the figure keeps its true z values: hover and colour bar stay in weights)
//   plotlyDiverging()                 PLOTLY_DIVERGING (use with zmid: 0 and a symmetric zmin/zmax)
//   applyGamma(v, gamma)              v in [0, 1] -> v^gamma (gamma < 1 lifts small weights)
//   cssGradient(direction, {gamma, kind})   a CSS gradient of either scale, for a colour key
//   attentionPixels(rows, max, gamma) RGBA pixels of an N x N matrix of weights (rows of numbers)
//   differencePixels(rows, maxAbs)    RGBA pixels of an N x N matrix of differences, symmetric around 0
//   matrixMax(rows), matrixMin(rows), matrixAbsMax(rows), HEAD_COLOURS, headColour(i)
//   isCausalMap(rows), scaleTop(rows), causalFirstRow(n)   the top of a map's colour scale: its largest value,
//                                     or for a causal map the largest value from row causalFirstRow(n) on
// Both scales interpolate linearly in RGB between their stops, as Plotly does between colorscale entries.

function hex(colour) {
  return [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16));
}

// Viridis (van der Walt and Smith, matplotlib) at 0, 16/255, 32/255, ..., 240/255 and 1: the stops of
// Plotly's own "Viridis". Perceptually uniform and readable with every common colour-vision deficiency.
const VIRIDIS = [
  '#440154', '#48186a', '#472d7b', '#424086', '#3b528b', '#33638d', '#2c728e', '#26828e', '#21918c',
  '#1fa088', '#28ae80', '#3fbc73', '#5ec962', '#84d44b', '#addc30', '#d8e219', '#fde725',
];
/** [[position, [r, g, b]], ...] from 0 to 1 */
export const SEQUENTIAL_STOPS = Object.freeze(
  VIRIDIS.map((colour, i) => Object.freeze([i === VIRIDIS.length - 1 ? 1 : (16 * i) / 255, Object.freeze(hex(colour))])),
);

// ColorBrewer "RdBu", 11 classes, reversed: negative blue, zero near-white, positive red; from -1 to 1.
const RDBU = [
  '#053061', '#2166ac', '#4393c3', '#92c5de', '#d1e5f0', '#f7f7f7',
  '#fddbc7', '#f4a582', '#d6604d', '#b2182b', '#67001f',
];
/** [[position in [0, 1] (0 = -1, 0.5 = 0, 1 = +1), [r, g, b]], ...] */
export const DIVERGING_STOPS = Object.freeze(
  RDBU.map((colour, i) => Object.freeze([i / (RDBU.length - 1), Object.freeze(hex(colour))])),
);

/** Kept for older callers: the sequential scale's colours, light or dark order as in SEQUENTIAL_STOPS. */
export const COLOR_STOPS = Object.freeze(SEQUENTIAL_STOPS.map(([, rgb]) => rgb));

function interpolate(stops, x) {
  const p = x > 0 ? Math.min(x, 1) : 0; // NaN -> 0
  let i = 0;
  while (i < stops.length - 2 && p > stops[i + 1][0]) i += 1;
  const [p0, a] = stops[i];
  const [p1, b] = stops[i + 1];
  const f = p1 > p0 ? (p - p0) / (p1 - p0) : 0;
  return [0, 1, 2].map((c) => Math.round(a[c] + (b[c] - a[c]) * f));
}

/** value in [0, 1] (clamped; NaN -> 0) -> [r, g, b] integers in 0..255 (viridis) */
export function sequential(value) {
  return interpolate(SEQUENTIAL_STOPS, value);
}

export const colormap = sequential;

/** value in [-1, 1] (clamped; NaN -> 0) -> [r, g, b] (blue – white – red) */
export function diverging(value) {
  const v = value > -1 ? (value < 1 ? value : 1) : value <= -1 ? -1 : 0;
  return interpolate(DIVERGING_STOPS, (v + 1) / 2);
}

/** value in [0, 1] -> value^gamma (clamped to [0, 1]; NaN -> 0). gamma < 1 lifts small values. */
export function applyGamma(value, gamma = 1) {
  const v = value > 0 ? Math.min(value, 1) : 0;
  return gamma === 1 ? v : v ** gamma;
}

const rgbText = (rgb) => `rgb(${rgb.join(',')})`;

export const PLOTLY_SEQUENTIAL = Object.freeze(SEQUENTIAL_STOPS.map(([p, rgb]) => Object.freeze([p, rgbText(rgb)])));
export const PLOTLY_DIVERGING = Object.freeze(DIVERGING_STOPS.map(([p, rgb]) => Object.freeze([p, rgbText(rgb)])));

const GAMMA_SAMPLES = 65; // colour at v^gamma sampled at 65 points: within 1/128 of a step of v

/**
 * The sequential scale as a Plotly colorscale (a fresh array Plotly may keep). With a gamma other than 1
 * the colour at v is sequential(v^gamma): the figure's z stays in weights.
 */
export function plotlyColorscale({ gamma = 1 } = {}) {
  if (gamma === 1) return PLOTLY_SEQUENTIAL.map(([p, c]) => [p, c]);
  return Array.from({ length: GAMMA_SAMPLES }, (_, i) => {
    const v = i / (GAMMA_SAMPLES - 1);
    return [v, rgbText(sequential(applyGamma(v, gamma)))];
  });
}

/** The diverging scale as a Plotly colorscale (with zmid 0 and zmin = -zmax). */
export function plotlyDiverging() {
  return PLOTLY_DIVERGING.map(([p, c]) => [p, c]);
}

/** Either scale as a CSS gradient, for a colour key (the sequential one with the same gamma as the map). */
export function cssGradient(direction = 'to right', { gamma = 1, kind = 'sequential' } = {}) { // ui-text: not UI (a CSS keyword)
  const steps = kind === 'diverging' ? DIVERGING_STOPS.map(([p]) => p)
    : gamma === 1 ? SEQUENTIAL_STOPS.map(([p]) => p)
      : Array.from({ length: 33 }, (_, i) => i / 32);
  const stops = steps.map((p) => {
    const rgb = kind === 'diverging' ? diverging(2 * p - 1) : sequential(applyGamma(p, gamma));
    return `${rgbText(rgb)} ${(100 * p).toFixed(1)}%`;
  });
  return `linear-gradient(${direction}, ${stops.join(', ')})`;
}

/** Largest entry of a matrix given as rows (0 for an empty one). */
export function matrixMax(matrix) {
  let max = 0;
  for (const row of matrix) for (const v of row) if (v > max) max = v;
  return max;
}

/** True when every entry above the diagonal is 0 (and there are at least 2 rows): a causal model's map. */
export function isCausalMap(matrix) {
  const n = matrix.length;
  if (n < 2) return false;
  for (let q = 0; q < n - 1; q += 1) {
    const row = matrix[q];
    for (let k = q + 1; k < row.length; k += 1) if (row[k] !== 0) return false;
  }
  return true;
}

/** The first row of a causal map that sets its colour scale: a quarter of the way down (0 for n < 4). */
export const causalFirstRow = (n) => Math.floor(n / 4);

/**
 * The value drawn in the brightest colour. An encoder's map (or any map with weight above the diagonal): its
 * largest value, so that each head uses its whole scale. A causal map: the largest value in rows
 * causalFirstRow(n) to n − 1. Query q of a causal model shares its weight among only q + 1 keys, so the first
 * rows are large by construction (row 0 is always 1, row 1 two weights that sum to 1): at 512 tokens a scale to
 * the map's maximum puts a near-uniform row 511 (1/512 each) at 0.2 % of the bar, black. From a quarter down
 * the same row sits at ≥ 25 % of the bar (1/512 against at most 1/129), and a head's real pattern (a previous-
 * token diagonal, a first-token column) keeps the top. Larger values in the first rows take the brightest
 * colour; hover and the colour bar stay in true weights. Per-row scaling was not chosen: it would make every
 * row's largest weight equally bright, hiding whether a query looks at one key or spreads over many.
 */
export function scaleTop(matrix) {
  if (!isCausalMap(matrix)) return matrixMax(matrix);
  return matrixMax(matrix.slice(causalFirstRow(matrix.length)));
}

// A scale at LEVELS evenly spaced values, as RGBA packed in one 32-bit word in the platform's byte order
// (so that a Uint32Array over ImageData's bytes takes one store per pixel). The nearest level is within
// 1 / (2 (LEVELS - 1)) of a value: less than 0.06 of a colour step of 255.
const LEVELS = 4096;
const tables = new Map();

function packedLevels(key, colour) {
  let table = tables.get(key);
  if (table) return table;
  table = new Uint32Array(LEVELS);
  const bytes = new Uint8ClampedArray(table.buffer);
  for (let i = 0; i < LEVELS; i += 1) bytes.set([...colour(i / (LEVELS - 1)), 255], 4 * i);
  tables.set(key, table);
  return table;
}

function pixels(matrix, table, toLevel) {
  const n = matrix.length;
  const out = new Uint8ClampedArray(n * n * 4);
  const words = new Uint32Array(out.buffer);
  let p = 0;
  for (let q = 0; q < n; q += 1) {
    const row = matrix[q];
    for (let k = 0; k < n; k += 1) {
      words[p] = table[toLevel(row[k])];
      p += 1;
    }
  }
  return out;
}

/**
 * RGBA pixels of an N x N matrix, one pixel per entry, row-major (row = query), coloured by
 * (value / max)^gamma on the sequential scale. Ready for `new ImageData(pixels, N, N)`.
 * Looked up in a table of the scale rather than computed per pixel: the explorer's grid colours
 * 72 maps of up to 64 x 64 at once, before anything else is drawn.
 */
export function attentionPixels(matrix, max = matrixMax(matrix), gamma = 1) {
  const top = LEVELS - 1;
  const table = packedLevels(`s${gamma}`, (v) => sequential(applyGamma(v, gamma)));
  const scale = max > 0 ? top / max : 0;
  return pixels(matrix, table, (w) => {
    const x = w * scale + 0.5; // NaN and negatives -> level 0, above max -> the last
    return x >= 1 ? (x < top ? x | 0 : top) : 0;
  });
}

/** RGBA pixels of an N x N matrix of differences on the diverging scale, -maxAbs blue, 0 white, +maxAbs red. */
export function differencePixels(matrix, maxAbs = matrixAbsMax(matrix)) {
  const top = LEVELS - 1;
  const table = packedLevels('d', (p) => diverging(2 * p - 1));
  const middle = top >> 1; // 0 (and NaN) -> white
  if (!(maxAbs > 0)) return pixels(matrix, table, () => middle);
  const scale = top / (2 * maxAbs);
  return pixels(matrix, table, (w) => {
    const x = (w + maxAbs) * scale + 0.5;
    return x >= 1 ? (x < top ? x | 0 : top) : x === x ? 0 : middle;
  });
}

/** Smallest entry of a matrix given as rows (0 for an empty one). */
export function matrixMin(matrix) {
  let min = 0;
  for (const row of matrix) for (const v of row) if (v < min) min = v;
  return min;
}

/** Largest absolute entry of a matrix (0 for an empty one): the half-range of a diverging scale. */
export function matrixAbsMax(matrix) {
  return Math.max(matrixMax(matrix), -matrixMin(matrix));
}

// One colour per head (the head view's lines and toggles): Paul Tol's "bright" and "muted" qualitative
// schemes, distinct for the common colour-vision deficiencies among their first 7; every head is also
// labelled with its number, so no head is told apart by colour alone.
export const HEAD_COLOURS = Object.freeze([
  '#4477aa', '#ee6677', '#228833', '#ccbb44', '#66ccee', '#aa3377',
  '#332288', '#ee7733', '#117733', '#882255', '#44aa99', '#999933',
]);

export function headColour(index) {
  return HEAD_COLOURS[((index % HEAD_COLOURS.length) + HEAD_COLOURS.length) % HEAD_COLOURS.length];
}
