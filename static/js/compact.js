// Decoder of the compact `u16` answers of /api/v1/attention and /api/v1/attention/summary.
// Layout: "ATN1", uint32 LE header length H, H bytes of JSON header (padded so the data starts at a
// multiple of 8), then uint16 LE values in (layer, head, row, column) order; weight = value / scale.

const MAGIC = 'ATN1';

/**
 * @param {ArrayBuffer} buffer the whole response body
 * @returns {{header: object, maps: Float32Array[][]}} maps[i][j] is the row-major matrix of
 *   header.layers[i], header.heads[j] (rows x columns = header.shape[2] x header.shape[3])
 */
export function decodeU16(buffer) {
  const view = new DataView(buffer);
  const magic = String.fromCharCode(...new Uint8Array(buffer, 0, 4));
  if (magic !== MAGIC) throw new Error(`not an attnscope compact answer (starts with ${JSON.stringify(magic)})`); // ui-text: not UI (a bug report)
  const size = view.getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, size)));
  const [layers, heads, rows, cols] = header.shape;
  const values = new Uint16Array(buffer, 8 + size, layers * heads * rows * cols); // platform order: little-endian
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

/** A row-major Float32Array as an array of rows (what Plotly's heatmap `z` takes). */
export function toRows(flat, rows, cols) {
  const out = new Array(rows);
  for (let r = 0; r < rows; r += 1) out[r] = Array.from(flat.subarray(r * cols, (r + 1) * cols));
  return out;
}
