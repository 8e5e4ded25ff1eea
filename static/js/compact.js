// Decoders of the compact answers. Each is one binary body: "ATN1", uint32 LE header length H, H bytes
// of JSON header (padded so the data starts at a multiple of 8), then little-endian values.
//   u16 (/api/v1/attention, /api/v1/attention/summary): uint16 values in (layer, head, row, column) order;
//     weight = value / scale.
//   f32 (/api/v1/trace): header.arrays names each array ({step, key, shape}) in body order; float32 values,
//     -inf where the JSON answer has null (a hidden entry).

const MAGIC = 'ATN1';

/** The header of a compact body and the byte offset where its values start. */
function readFrame(buffer) {
  const view = new DataView(buffer);
  const magic = String.fromCharCode(...new Uint8Array(buffer, 0, 4));
  if (magic !== MAGIC) throw new Error(`not an attnscope compact answer (starts with ${JSON.stringify(magic)})`); // ui-text: not UI (a bug report)
  const size = view.getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, size)));
  return { header, offset: 8 + size };
}

/**
 * @param {ArrayBuffer} buffer the whole response body
 * @returns {{header: object, maps: Float32Array[][]}} maps[i][j] is the row-major matrix of
 *   header.layers[i], header.heads[j] (rows x columns = header.shape[2] x header.shape[3])
 */
export function decodeU16(buffer) {
  const { header, offset } = readFrame(buffer);
  const [layers, heads, rows, cols] = header.shape;
  const values = new Uint16Array(buffer, offset, layers * heads * rows * cols); // platform order: little-endian
  const scale = 1 / header.scale;
  const maps = [];
  for (let i = 0; i < layers; i += 1) {
    const row = [];
    for (let j = 0; j < heads; j += 1) {
      const start = (i * heads + j) * rows * cols;
      const out = new Float32Array(rows * cols);
      for (let k = 0; k < out.length; k += 1) out[k] = values[start + k] * scale;
      row.push(out);
    }
    maps.push(row);
  }
  return { header, maps };
}

/** Row-major float32 values of `shape` as nested arrays of numbers; -inf (hidden) becomes null, as in JSON. */
function nested(values, shape, start) {
  if (shape.length === 1) {
    const out = new Array(shape[0]);
    for (let i = 0; i < shape[0]; i += 1) {
      const v = values[start + i];
      out[i] = v === -Infinity ? null : v;
    }
    return out;
  }
  const [count, ...inner] = shape;
  const step = inner.reduce((a, b) => a * b, 1);
  const out = new Array(count);
  for (let i = 0; i < count; i += 1) out[i] = nested(values, inner, start + i * step);
  return out;
}

/** Define `object[name]` as `make()`, made on first read only (then an ordinary property). */
function lazy(object, name, make) {
  Object.defineProperty(object, name, {
    enumerable: true,
    configurable: true,
    get() {
      const value = make();
      Object.defineProperty(object, name, { value, enumerable: true, configurable: true, writable: true });
      return value;
    },
  });
}

/**
 * The compact f32 trace as the JSON answer of /api/v1/trace: the header's fields and `steps` with the
 * same nested arrays of numbers (the very float32 numbers the JSON carries; hidden entries null). Each
 * array is turned into nested arrays when it is first read, so a page that shows one step at a time
 * pays for the others only when it shows them.
 * @param {ArrayBuffer} buffer the whole response body
 * @returns {object} {model, tokens, layer, d_model, n_heads, d_head, heads, scale, steps}, and for a model with
 *   RoPE `rope` and `rotated` {q, k}
 */
export function decodeTraceF32(buffer) {
  const { header, offset } = readFrame(buffer);
  const { arrays, dtype, ...fields } = header;
  if (dtype !== 'float32') throw new Error(`a trace of ${dtype}, not float32`); // ui-text: not UI (a bug report)
  const total = arrays.reduce((sum, a) => sum + a.shape.reduce((x, y) => x * y, 1), 0);
  const values = new Float32Array(buffer, offset, total); // platform order: little-endian
  const steps = {};
  let start = 0;
  for (const { step, key, shape } of arrays) {
    const make = ((first) => () => nested(values, shape, first))(start);
    if (key === null) lazy(steps, step, make);
    else lazy((steps[step] ??= {}), key, make);
    start += shape.reduce((x, y) => x * y, 1);
  }
  // A model with RoPE: q and k after the rotation come as step "rotated"; the JSON answer has them beside
  // `steps`. (Taken out with delete, not a rest spread, which would read, and so make, every other step.)
  // The rest of the block (`block`): its arrays come as step "block", its other fields in the header.
  const { rotated, block } = steps;
  delete steps.rotated;
  delete steps.block;
  const answer = rotated ? { ...fields, steps, rotated } : { ...fields, steps };
  if (fields.block) answer.block = { ...fields.block, arrays: block ?? {} };
  return answer;
}

/** A row-major Float32Array as an array of rows (what Plotly's heatmap `z` takes). */
export function toRows(flat, rows, cols) {
  const out = new Array(rows);
  for (let r = 0; r < rows; r += 1) out[r] = Array.from(flat.subarray(r * cols, (r + 1) * cols));
  return out;
}
