// The decoder of the compact u16 answers (static/js/compact.js) against bodies encoded here by hand from
// the documented layout (docs/encoding.md, app/serialize.py), all integers little-endian:
//   bytes 0-3 "ATN1" | bytes 4-7 uint32 H | H bytes of UTF-8 JSON header, padded with spaces so the data
//   starts at a multiple of 8 | uint16 values in row-major (layer, head, query, key) order; weight = value / scale.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { decodeU16, toRows } from '../../static/js/compact.js';

const SCALE = 65535;

/** A compact body as the server writes it (app/serialize.py u16_response), from a header and integer values. */
function encode(header, shape, values, { magic = 'ATN1', scale = SCALE } = {}) {
  let head = new TextEncoder().encode(JSON.stringify({ ...header, shape, dtype: 'uint16', scale }));
  const padding = (8 - ((8 + head.length) % 8)) % 8;
  head = new Uint8Array([...head, ...new Array(padding).fill(0x20)]);
  const count = shape.reduce((a, b) => a * b, 1);
  assert.equal(values.length, count, 'one value per weight');
  const buffer = new ArrayBuffer(8 + head.length + 2 * count);
  const bytes = new Uint8Array(buffer);
  const view = new DataView(buffer);
  for (let i = 0; i < 4; i += 1) bytes[i] = magic.charCodeAt(i);
  view.setUint32(4, head.length, true);
  bytes.set(head, 8);
  values.forEach((value, i) => view.setUint16(8 + head.length + 2 * i, value, true));
  assert.equal((8 + head.length) % 8, 0);
  return buffer;
}

const quantize = (weight) => Math.round(weight * SCALE); // model/maps.py quantize_u16

test('the header comes back whole, non-ASCII text included (its length is counted in bytes)', () => {
  const tokens = [{ text: '我', start: 0, end: 1 }, { text: 'é', start: 1, end: 2 }];
  const { header } = decodeU16(encode({ tokens, layers: [3], heads: [0, 5], model: 'bert' }, [1, 2, 2, 2], new Array(8).fill(0)));
  assert.deepEqual(header, { tokens, layers: [3], heads: [0, 5], model: 'bert', shape: [1, 2, 2, 2], dtype: 'uint16', scale: SCALE });
});

test('values are read in (layer, head, query, key) order, one row-major Float32Array per map', () => {
  const shape = [2, 3, 2, 4]; // 2 layers, 3 heads, 2 query rows, 4 key columns
  const values = Array.from({ length: 2 * 3 * 2 * 4 }, (_, i) => i + 1);
  const { maps } = decodeU16(encode({}, shape, values));
  assert.equal(maps.length, 2);
  for (let layer = 0; layer < 2; layer += 1) {
    assert.equal(maps[layer].length, 3);
    for (let head = 0; head < 3; head += 1) {
      const map = maps[layer][head];
      assert.ok(map instanceof Float32Array);
      assert.equal(map.length, 2 * 4);
      for (let q = 0; q < 2; q += 1) {
        for (let k = 0; k < 4; k += 1) {
          const value = ((layer * 3 + head) * 2 + q) * 4 + k + 1;
          assert.equal(map[q * 4 + k], Math.fround(value / SCALE), `layer ${layer} head ${head} (${q}, ${k})`);
        }
      }
    }
  }
});

test('weight = value / 65535: 0 is 0, 65535 is 1, and a quantized weight comes back within 7.7e-6', () => {
  const weights = [0, 1, 0.5, 1e-6, 0.01, 0.123456, 1 / 3, 0.999999, 2 / 7, 0.75];
  const { maps } = decodeU16(encode({}, [1, 1, 2, 5], weights.map(quantize)));
  const map = maps[0][0];
  assert.equal(map[0], 0);
  assert.equal(map[1], 1);
  weights.forEach((weight, i) => {
    const error = Math.abs(map[i] - weight);
    // 1/131070 from the rounding to 16 bits, and float32's half ulp below 1 (2^-25) from the Float32Array.
    assert.ok(error <= 1 / 131070 + 2 ** -25, `${weight} came back as ${map[i]} (error ${error})`);
  });
});

test('values are little-endian whatever the byte pattern', () => {
  // 0x0102 and 0x0201 differ only by byte order.
  const { maps } = decodeU16(encode({}, [1, 1, 1, 2], [0x0102, 0x0201]));
  assert.deepEqual(Array.from(maps[0][0]), [Math.fround(0x0102 / SCALE), Math.fround(0x0201 / SCALE)]);
});

test('every header padding, 0 to 7 spaces, decodes', () => {
  for (let extra = 0; extra < 8; extra += 1) {
    const header = { note: 'x'.repeat(extra) };
    const { header: back, maps } = decodeU16(encode(header, [1, 1, 1, 3], [1, 2, 65535]));
    assert.equal(back.note, header.note);
    assert.deepEqual(Array.from(maps[0][0]), [Math.fround(1 / SCALE), Math.fround(2 / SCALE), 1]);
  }
});

test("the header's scale divides the values", () => {
  const { maps } = decodeU16(encode({}, [1, 1, 1, 2], [255, 51], { scale: 255 }));
  assert.deepEqual(Array.from(maps[0][0]), [1, Math.fround(0.2)]);
});

test('a body that does not start with ATN1 is refused', () => {
  assert.throws(() => decodeU16(encode({}, [1, 1, 1, 1], [0], { magic: '{"at' })),
    /not an attnscope compact answer \(starts with "\{\\"at"\)/);
});

test('toRows turns a row-major map into an array of rows of plain numbers', () => {
  const flat = new Float32Array([1, 2, 3, 4, 5, 6]);
  const rows = toRows(flat, 2, 3);
  assert.deepEqual(rows, [[1, 2, 3], [4, 5, 6]]);
  assert.ok(Array.isArray(rows[0]));
  assert.deepEqual(toRows(new Float32Array(6), 3, 2), [[0, 0], [0, 0], [0, 0]]);
});
