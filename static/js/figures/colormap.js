// One sequential colour map for every attention picture, so the canvas
// thumbnails and the Plotly heatmap show the same colour for the same value.
// Both interpolate linearly in RGB between the same stops (Plotly does the
// same between colorscale entries).

// ColorBrewer "Blues", 9 classes, light (0) to dark (1).
export const COLOR_STOPS = Object.freeze([
  [247, 251, 255],
  [222, 235, 247],
  [198, 219, 239],
  [158, 202, 225],
  [107, 174, 214],
  [66, 146, 198],
  [33, 113, 181],
  [8, 81, 156],
  [8, 48, 107],
]);

const LAST = COLOR_STOPS.length - 1;

/** value in [0, 1] (clamped; NaN -> 0) -> [r, g, b] integers in 0..255 */
export function colormap(value) {
  const t = value > 0 ? Math.min(value, 1) : 0;
  const x = t * LAST;
  const i = Math.min(Math.floor(x), LAST - 1);
  const f = x - i;
  const a = COLOR_STOPS[i];
  const b = COLOR_STOPS[i + 1];
  return [0, 1, 2].map((c) => Math.round(a[c] + (b[c] - a[c]) * f));
}

/** The same map as a Plotly colorscale: [[0, 'rgb(...)'], ..., [1, 'rgb(...)']]. */
export function plotlyColorscale() {
  return COLOR_STOPS.map((rgb, i) => [i / LAST, `rgb(${rgb.join(',')})`]);
}

/** The same map as a CSS gradient, for a colour key. */
export function cssGradient(direction = 'to right') { // ui-text: not UI (a CSS keyword)
  const stops = COLOR_STOPS.map((rgb, i) => `rgb(${rgb.join(',')}) ${((100 * i) / LAST).toFixed(1)}%`);
  return `linear-gradient(${direction}, ${stops.join(', ')})`;
}

/** Largest entry of a matrix (0 for an empty one). */
export function matrixMax(matrix) {
  let max = 0;
  for (const row of matrix) for (const v of row) if (v > max) max = v;
  return max;
}

// colormap() at LEVELS evenly spaced values, as RGBA packed in one 32-bit word in the platform's
// byte order (so that a Uint32Array over ImageData's bytes takes one store per pixel). The nearest
// level is within 1 / (2 (LEVELS - 1)) of a value: less than 0.06 of a colour step of 255.
const LEVELS = 4096;
let packed = null;

function packedLevels() {
  if (packed) return packed;
  packed = new Uint32Array(LEVELS);
  const bytes = new Uint8ClampedArray(packed.buffer);
  for (let i = 0; i < LEVELS; i += 1) {
    const [r, g, b] = colormap(i / (LEVELS - 1));
    bytes.set([r, g, b, 255], 4 * i);
  }
  return packed;
}

/**
 * RGBA pixels of an N x N matrix, one pixel per entry, row-major (row = query),
 * coloured by value / max. Ready for `new ImageData(pixels, N, N)`.
 * Looked up in a table of colormap() rather than computed per pixel: the explorer's grid colours
 * 72 maps of up to 64 x 64 at once, before anything else is drawn.
 */
export function attentionPixels(matrix, max = matrixMax(matrix)) {
  const n = matrix.length;
  const top = LEVELS - 1;
  const scale = max > 0 ? top / max : 0;
  const table = packedLevels();
  const pixels = new Uint8ClampedArray(n * n * 4);
  const words = new Uint32Array(pixels.buffer);
  let p = 0;
  for (let q = 0; q < n; q += 1) {
    const row = matrix[q];
    for (let k = 0; k < n; k += 1) {
      const x = row[k] * scale + 0.5; // NaN and negatives -> level 0, above max -> the last
      words[p] = table[x >= 1 ? (x < top ? x | 0 : top) : 0];
      p += 1;
    }
  }
  return pixels;
}
