// The explorer's "Continue this text" as data (static/js/views/generate-state.js): the room an input leaves,
// the settings checked as the server checks them, a run built from its events, the grown map and the KV
// cache's numbers (worked out here by hand from the formula).
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  applyEvent, cacheNumbers, createRun, grownMatrix, readSettings, room, samples, stopRun, wholeText,
} from '../../static/js/views/generate-state.js';

test('room: at most 256 new tokens, and never past the model’s limit', () => {
  assert.equal(room(64, 5), 59);
  assert.equal(room(1024, 5), 256);
  assert.equal(room(64, 64), 0);
  assert.equal(room(64, 70), 0);
  assert.equal(room(64, 63), 1);
});

const typed = (changes = {}) => ({ maxNew: '20', temperature: '0', topK: '0', topP: '1', seed: '0', ...changes });

test('settings: greedy ignores the sampling fields; sampling reads them', () => {
  assert.deepEqual(readSettings(typed({ topP: 'nonsense', seed: '-1' }), 59).body,
    { max_new_tokens: 20, temperature: 0, top_k: 0, top_p: 1, seed: 0 });
  const sampled = readSettings(typed({ temperature: '0.8', topK: '40', topP: '0.95', seed: '7' }), 59).body;
  assert.deepEqual(sampled, { max_new_tokens: 20, temperature: 0.8, top_k: 40, top_p: 0.95, seed: 7 });
  assert.ok(samples(sampled));
  assert.ok(!samples(readSettings(typed(), 59).body));
});

test('settings: each field refused where the server would refuse it, with its key', () => {
  const field = (changes, most = 59) => readSettings(typed(changes), most).error;
  assert.deepEqual(field({ maxNew: '60' }), { field: 'maxNew', key: 'generate.invalid.maxNew', values: { most: 59 } });
  for (const maxNew of ['0', '2.5', '', 'x', '-3']) assert.equal(field({ maxNew }).field, 'maxNew', maxNew);
  assert.equal(field({ maxNew: '256' }, 256), undefined);
  assert.equal(field({ maxNew: '257' }, 256).field, 'maxNew');
  for (const temperature of ['-1', '101', '', 'hot']) assert.equal(field({ temperature }).field, 'temperature', temperature);
  const hot = { temperature: '1' };
  for (const topK of ['-1', '1.5', '']) assert.equal(field({ ...hot, topK }).field, 'topK', topK);
  for (const topP of ['0', '1.01', '-0.5', '']) assert.equal(field({ ...hot, topP }).field, 'topP', topP);
  assert.equal(field({ ...hot, topP: '1' }), undefined);
  for (const seed of ['-1', '2147483648', '0.5']) assert.equal(field({ ...hot, seed }).field, 'seed', seed);
  assert.equal(field({ ...hot, seed: '2147483647' }), undefined);
});

const PROMPT = {
  tokens: [{ text: 'Hello', display: 'Hello' }, { text: 'Ġworld', display: ' world' }],
  n_layers: 2, n_heads: 4, n_kv_heads: 2, d_head: 16, dtype: 'float32', limit: 64,
};
const token = (index, display, attention = null) => ({
  index, token: { id: index, text: display, display }, probability: 0.5, top: [], attention,
  cache_bytes: 2 * 2 * (index + 1) * 2 * 16 * 4,
});

test('a run: prompt, tokens in order, done; anything else is refused', () => {
  const run = createRun({ max_new_tokens: 2 });
  assert.throws(() => applyEvent(run, 'token', token(2, '!')), /unexpected/);
  applyEvent(run, 'prompt', PROMPT);
  assert.throws(() => applyEvent(run, 'token', token(3, '!')), /out-of-order/);
  applyEvent(run, 'token', token(2, ','));
  applyEvent(run, 'token', token(3, ' hi'));
  applyEvent(run, 'done', { text: ', hi', tokens: 2, stopped: 'length', tokens_per_second: 9 });
  assert.equal(run.stopped, 'length');
  assert.equal(wholeText('Hello world', run), 'Hello world, hi');
  assert.throws(() => applyEvent(run, 'token', token(4, '?')), /unexpected/);
  assert.equal(stopRun(run).stopped, 'length'); // a finished run stays as it ended
  const stopped = stopRun(applyEvent(createRun({}), 'prompt', PROMPT));
  assert.equal(stopped.stopped, 'user');
});

test('the grown map: input rows padded with zeros, each new row its own attention', () => {
  const input = [[1, 0], [0.25, 0.75]];
  // attention[layer][head][key]: layer 1, head 0 is the one drawn
  const a = (row) => [[[9], [9]], [row, [7, 7, 7, 7]]];
  const tokens = [token(2, '!', a([0.5, 0.25, 0.25])), token(3, '?', a([0.1, 0.2, 0.3, 0.4]))];
  assert.deepEqual(grownMatrix(input, 2, tokens, 1, 0), [
    [1, 0, 0, 0],
    [0.25, 0.75, 0, 0],
    [0.5, 0.25, 0.25, 0],
    [0.1, 0.2, 0.3, 0.4],
  ]);
  // a Float32Array row (the explorer's decoded map) reads the same
  assert.deepEqual(grownMatrix([Float32Array.of(1, 0), Float32Array.of(0.25, 0.75)], 2, tokens.slice(0, 1), 1, 0)[1],
    [0.25, 0.75, 0]);
  // the input's rows unknown: nothing drawn there (null), the new rows still are
  assert.deepEqual(grownMatrix(null, 2, tokens.slice(0, 1), 1, 0), [[null, null, null], [null, null, null], [0.5, 0.25, 0.25]]);
});

test('the KV cache: the formula, and what multi-head attention would keep', () => {
  const grouped = cacheNumbers(PROMPT, token(9, 'x'));
  // 2 (k and v) · 2 layers · 10 tokens · 2 kv heads · 16 · 4 bytes
  assert.equal(grouped.formula, 2 * 2 * 10 * 2 * 16 * 4);
  assert.equal(grouped.bytes, 5120);
  assert.equal(grouped.multiHead, 10240); // 4 heads each with its own keys and values
  assert.ok(grouped.grouped);
  assert.equal(grouped.tokens, 10);
  const plain = cacheNumbers({ ...PROMPT, n_kv_heads: 4 }, { index: 9, cache_bytes: 10240 });
  assert.ok(!plain.grouped);
  assert.equal(plain.multiHead, plain.bytes);
  assert.equal(plain.formula, plain.bytes);
  // a bfloat16 model's cache: 2 bytes a number
  const half = cacheNumbers({ ...PROMPT, dtype: 'bfloat16' }, { index: 9, cache_bytes: 2560 });
  assert.equal(half.formula, 2 * 2 * 10 * 2 * 16 * 2);
  assert.equal(half.formula, half.bytes);
  assert.equal(half.size, 2);
});
