// The decoders of the compact answers (static/js/compact.js) against bodies encoded here by hand from
// the documented layout (docs/encoding.md, app/serialize.py), all integers little-endian:
//   bytes 0-3 "ATN1" | bytes 4-7 uint32 H | H bytes of UTF-8 JSON header, padded with spaces so the data
//   starts at a multiple of 8 | u16: uint16 values in row-major (layer, head, query, key) order,
//   weight = value / scale | f32 (the trace): each array of header.arrays ({step, key, shape}) in turn,
//   float32 values in row-major order, -inf where the JSON answer has null.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import { decodeTraceF32, decodeU16, toRows } from '../../static/js/compact.js';

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

// ---- the f32 trace ---------------------------------------------------------------

/** The JSON answer's nested numbers flattened in row-major order, with their shape. */
function flatten(numbers) {
  const shape = [];
  for (let level = numbers; Array.isArray(level); level = level[0]) shape.push(level.length);
  return { shape, values: numbers.flat(shape.length) };
}

/** An f32 trace body as the server writes it (app/serialize.py f32_trace_response), from a JSON answer. */
function encodeTrace(answer) {
  const { steps: traced, rotated, block, ...fields } = answer;
  // a RoPE model's rotated q and k go right after the split, as step "rotated"
  const steps = rotated ? Object.fromEntries(Object.entries(traced).flatMap(
    ([step, value]) => (step === 'split' ? [[step, value], ['rotated', rotated]] : [[step, value]]))) : { ...traced };
  // the block's arrays last, as step "block"; the rest of `block` in the header (app/routes/api.py trace)
  if (block) {
    const { arrays: blockArrays, ...blockFields } = block;
    steps.block = blockArrays;
    fields.block = blockFields;
  }
  const arrays = [];
  const chunks = [];
  for (const [step, value] of Object.entries(steps)) {
    const parts = Array.isArray(value) ? [[null, value]] : Object.entries(value);
    for (const [key, numbers] of parts) {
      const { shape, values } = flatten(numbers);
      arrays.push({ step, key, shape });
      chunks.push(values.map((v) => (v === null ? -Infinity : v)));
    }
  }
  let head = new TextEncoder().encode(JSON.stringify({ ...fields, dtype: 'float32', arrays }));
  head = new Uint8Array([...head, ...new Array((8 - ((8 + head.length) % 8)) % 8).fill(0x20)]);
  const values = chunks.flat();
  const buffer = new ArrayBuffer(8 + head.length + 4 * values.length);
  const view = new DataView(buffer);
  new Uint8Array(buffer).set(new TextEncoder().encode('ATN1'), 0);
  view.setUint32(4, head.length, true);
  new Uint8Array(buffer).set(head, 8);
  values.forEach((v, i) => view.setFloat32(8 + head.length + 4 * i, v, true));
  return buffer;
}

/** A small trace as /api/v1/trace answers in JSON: 3 tokens, d_model 4, one head of d_head 2, a hidden key. */
function jsonTrace() {
  const f = (seed, rows, cols) => Array.from({ length: rows }, (_, i) => Array.from({ length: cols },
    (_, j) => Math.fround(Math.sin(seed * 7.1 + i * 3.3 + j) * 10 ** ((i + j) % 4 - 1)))); // float32 numbers, as the JSON's
  const hidden = (m) => m.map((row, i) => row.map((v, j) => (j > i ? null : v)));
  return {
    model: 'minilm',
    tokens: [{ text: '[CLS]', start: null, end: null, special: true, segment: 0 },
      { text: '我', start: 0, end: 1, special: false, segment: 0 }, { text: '[SEP]', start: null, end: null, special: true, segment: 0 }],
    layer: 2, d_model: 4, n_heads: 2, d_head: 2, heads: [1], scale: 0.7071067811865476,
    steps: {
      input: f(1, 3, 4),
      project: { q: f(2, 3, 4), k: f(3, 3, 4), v: f(4, 3, 4) },
      split: { q: [f(5, 3, 2)], k: [f(6, 3, 2)], v: [f(7, 3, 2)] },
      scores: [f(8, 3, 3)],
      scale: [f(9, 3, 3)],
      mask: [hidden(f(9, 3, 3))],
      softmax: [[[1, 0, 0], [Math.fround(0.25), Math.fround(0.75), 0], [Math.fround(0.1), Math.fround(0.2), Math.fround(0.7)]]],
      weighted_sum: [f(10, 3, 2)],
      concat: f(11, 3, 4),
      output: f(12, 3, 4),
    },
  };
}

test('an f32 trace decodes to the JSON answer: every field, every step in order, the very same numbers', () => {
  const answer = jsonTrace();
  const decoded = decodeTraceF32(encodeTrace(answer));
  assert.deepEqual(decoded, answer); // exact: the JSON's numbers are float32 numbers
  assert.deepEqual(Object.keys(decoded.steps), Object.keys(answer.steps));
  assert.ok(decoded.steps.input.every((row) => Array.isArray(row)), 'rows are plain arrays, as JSON.parse makes them');
});

test('a RoPE trace decodes with `rotated` beside the steps, as in the JSON answer', () => {
  const answer = jsonTrace();
  const f = (seed) => [[0, 1], [2, 3], [4, seed]].map((row) => row.map((v) => Math.fround(v + 0.5)));
  answer.rope = { theta: 10000, scaling: null, frequencies: [1, 0.01] };
  answer.rotated = { q: [f(5)], k: [f(6)] };
  const buffer = encodeTrace(answer);
  const size = new DataView(buffer).getUint32(4, true);
  const { arrays } = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, size)));
  assert.deepEqual(arrays.slice(4, 9).map((a) => `${a.step}.${a.key}`), ['split.q', 'split.k', 'split.v', 'rotated.q', 'rotated.k']);
  const decoded = decodeTraceF32(buffer);
  assert.deepEqual(decoded, answer);
  assert.deepEqual(Object.keys(decoded.steps), Object.keys(answer.steps)); // no step "rotated"
  assert.ok(!('rotated' in decodeTraceF32(encodeTrace(jsonTrace()))), 'no rotation, no `rotated`');
});

test('a trace with the block decodes with `block.arrays` in its steps\' order, as in the JSON answer', () => {
  const answer = jsonTrace();
  const row = (seed, width) => [0, 1, 2].map((i) => Array.from({ length: width }, (_, j) => Math.fround(seed + i - j / 8)));
  answer.block = {
    order: 'post', norm: 'layer', eps: 1e-12, activation: 'gelu', gated: false, d_ff: 8,
    steps: [{ name: 'block_input', caption_key: 'steps.block.block_input', shape: [3, 4] },
      { name: 'add_1', caption_key: 'steps.block.add_1.post', shape: [3, 4] },
      { name: 'mlp_hidden', caption_key: 'steps.block.mlp_hidden', shape: [3, 8] }],
    arrays: { block_input: row(1, 4), add_1: row(2, 4), mlp_hidden: row(3, 8) },
    params: { norm_1: { weight: [1, 1, 1, 1], bias: null } }, output_step: 'norm_2',
  };
  const decoded = decodeTraceF32(encodeTrace(answer));
  assert.deepEqual(decoded, answer);
  assert.deepEqual(Object.keys(decoded.block.arrays), ['block_input', 'add_1', 'mlp_hidden']);
  assert.deepEqual(Object.keys(decoded.steps), Object.keys(answer.steps)); // no step "block"
  assert.ok(!('block' in decodeTraceF32(encodeTrace(jsonTrace()))), 'no block asked, no `block`');
});

test('-inf in an f32 trace is a hidden entry: null, as in the JSON answer', () => {
  const decoded = decodeTraceF32(encodeTrace(jsonTrace()));
  assert.deepEqual(decoded.steps.mask[0].map((row) => row.map((v) => v === null)),
    [[false, true, true], [false, false, true], [false, false, false]]);
  assert.equal(decoded.steps.scale[0][0][1], jsonTrace().steps.scale[0][0][1]); // the same entry, not hidden, before the mask
});

test('numbers that are not float32 come back rounded to float32, within half an ulp', () => {
  const answer = jsonTrace();
  answer.steps.input[0] = [0.1, -1 / 3, 123456.789, 1e-8];
  const back = decodeTraceF32(encodeTrace(answer)).steps.input[0];
  answer.steps.input[0].forEach((v, i) => {
    assert.equal(back[i], Math.fround(v));
    assert.ok(Math.abs(back[i] - v) <= Math.abs(v) * 2 ** -24);
  });
});

test('a trace body of another dtype is refused', () => {
  const buffer = encodeTrace(jsonTrace());
  const size = new DataView(buffer).getUint32(4, true);
  const head = new TextDecoder().decode(new Uint8Array(buffer, 8, size)).replace('"float32"', '"float16"');
  new Uint8Array(buffer).set(new TextEncoder().encode(head), 8);
  assert.throws(() => decodeTraceF32(buffer), /a trace of float16, not float32/);
});

test('each array of an f32 trace is made on its first read, then kept', () => {
  const decoded = decodeTraceF32(encodeTrace(jsonTrace()));
  const before = Object.getOwnPropertyDescriptor(decoded.steps, 'softmax');
  assert.equal(typeof before.get, 'function', 'not made yet');
  assert.ok(before.enumerable);
  const first = decoded.steps.softmax;
  assert.equal(decoded.steps.softmax, first, 'the same arrays on the next read');
  assert.ok('value' in Object.getOwnPropertyDescriptor(decoded.steps, 'softmax'));
  assert.equal(typeof Object.getOwnPropertyDescriptor(decoded.steps.project, 'k').get, 'function');
  assert.deepEqual(decoded.steps.project.k, jsonTrace().steps.project.k);
});
