// The widget's data (attnscope/notebook.py): the maps arrive as one buffer of uint16 weights (weight =
// value / 65535, docs/encoding.md) in row-major (layer, head, query, key) order, the steps of one head as
// float32. Pure: no DOM, so that node --test can check it.

export const U16_SCALE = 65535;

/** The bytes of a synced buffer (a DataView in a notebook, an ArrayBuffer or typed array elsewhere). */
function bytesOf(buffer) {
  if (buffer instanceof ArrayBuffer) return new Uint8Array(buffer);
  if (ArrayBuffer.isView(buffer)) return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  return new Uint8Array(0);
}

/** A copy of the buffer's bytes, aligned, as little-endian values of `Type` (Uint16Array, Float32Array). */
function valuesOf(buffer, Type) {
  const bytes = bytesOf(buffer);
  const copy = new Uint8Array(bytes.byteLength - (bytes.byteLength % Type.BYTES_PER_ELEMENT));
  copy.set(bytes.subarray(0, copy.length));
  return new Type(copy.buffer);
}

/**
 * Every map as float32: {shape: [L, H, N, N], weights: Float32Array} from the uint16 buffer.
 * Throws when the buffer does not hold L x H x N x N values.
 */
export function decodeMaps(buffer, shape) {
  const values = valuesOf(buffer, Uint16Array);
  const [layers, heads, rows, cols] = shape;
  const size = layers * heads * rows * cols;
  if (values.length !== size) throw new Error(`attnscope: ${values.length} weights for the shape ${shape.join(' x ')}`); // ui-text: not UI (a bug report)
  const weights = new Float32Array(size);
  for (let i = 0; i < size; i += 1) weights[i] = values[i] / U16_SCALE;
  return { shape: [layers, heads, rows, cols], weights };
}

/** The (N, N) map at positions (row, col) of the grid, row-major. */
export function mapAt(maps, row, col) {
  const [, heads, n] = maps.shape;
  const start = (row * heads + col) * n * n;
  return maps.weights.subarray(start, start + n * n);
}

/** A row-major N x N map as N rows (views, no copy), the form of the colour functions (figures/colormap.js). */
export function rowsOf(flat, n) {
  return Array.from({ length: n }, (_, q) => flat.subarray(q * n, (q + 1) * n));
}

/** Every map as rows of rows: attention[row][col] for the grid (views/overview.js render). */
export function gridOf(maps) {
  const [layers, heads, n] = maps.shape;
  return Array.from({ length: layers }, (_, row) => Array.from({ length: heads }, (_, col) => rowsOf(mapAt(maps, row, col), n)));
}

/** One layer's maps for the head view (views/head-view.js render): maps[i] is head i's row-major map. */
export function layerOf(maps, row) {
  const [, heads] = maps.shape;
  return Array.from({ length: heads }, (_, col) => mapAt(maps, row, col));
}

/**
 * The steps of one head: {names, shapes: {name: [T, T]}} and the float32 buffer holding them one after the
 * other in `names` order -> {name: rows}. Masked entries (-Infinity) stay as they are.
 */
export function stepsOf(meta, buffer) {
  const values = valuesOf(buffer, Float32Array);
  const out = {};
  let offset = 0;
  for (const name of meta?.names ?? []) {
    const [rows, cols] = meta.shapes[name];
    const flat = values.subarray(offset, offset + rows * cols);
    out[name] = Array.from({ length: rows }, (_, q) => flat.subarray(q * cols, (q + 1) * cols));
    offset += rows * cols;
  }
  return out;
}

/** The largest |value| of a matrix, ignoring infinities (a mask's hidden keys). */
export function finiteAbsMax(matrix) {
  let max = 0;
  for (const row of matrix) for (const v of row) if (Number.isFinite(v) && Math.abs(v) > max) max = Math.abs(v);
  return max;
}

/** The matrix with -Infinity (hidden keys) drawn as the most negative finite value. */
export function clampMasked(matrix, maxAbs) {
  return matrix.map((row) => Float32Array.from(row, (v) => (Number.isFinite(v) ? v : -maxAbs)));
}

/** The grid position of the model's (layer, head), or null when the maps do not hold it. */
export function positionOf(layers, heads, layer, head) {
  const row = layers.indexOf(layer);
  const col = heads.indexOf(head);
  return row < 0 || col < 0 ? null : { row, col };
}
