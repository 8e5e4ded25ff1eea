// The /flash page's arithmetic (static/js/figures/flash.js) and its URL (static/js/toy/flash-url.js), on
// answers written out here by hand: tile geometry, the rescale factors recomputed from m, what each
// caption claims (checked against the m values themselves), fast memory, and the backward's running sums.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  backwardCaption, captionKey, fastMemory, forwardCaption, forwardStep, gradientsAfter, gridOf, indexRuns, maxAbsDiff,
  numberFormat, rescaleFactor, rowDots, rowMaxima, span, tileIndex,
} from '../../static/js/figures/flash.js';
import { flashParams, flashRequest, readFlashState, toyParams, writeFlashState } from '../../static/js/toy/flash-url.js';
import { identityWeights } from '../../static/js/toy/url.js';
import { has } from '../../static/js/i18n/index.js';

const close = (a, b) => assert.ok(Math.abs(a - b) < 1e-15, `${a} vs ${b}`);

// Two queries in one block (Br = 2) against three keys one at a time (Bc = 1). Scores by row:
//   q0: 1, 3, −∞        q1: 2, 1, 5
// so the running maxima after each tile are q0: 1, 3, 3 and q1: 2, 2, 5. ℓ and O are not read by the
// arithmetic under test (only passed through), so they are left as placeholders of the right shape.
function handAnswer() {
  const m = [[1, 2], [3, 2], [3, 5]];
  const scores = [[[1], [2]], [[3], [1]], [[null], [5]]];
  const tiles = scores.map((s, j) => ({
    row_block: 0, col_block: j, rows: [0, 2], cols: [j, j + 1], skipped: false, scores: s, m: m[j], l: [j + 1, j + 2],
    o: [[j, j], [j, j]],
  }));
  return { q: [[1, 0], [0, 1]], k: [[1, 0], [0, 1], [1, 1]], v: [[1, 2], [3, 4], [5, 6]], tiles, scale: 1 };
}

test('the grid: query blocks × key blocks, each tile found by its place, [start, end) spans', () => {
  const tiles = [0, 1].flatMap((i) => [0, 1, 2].map((j) => ({ row_block: i, col_block: j })));
  assert.deepEqual(gridOf(tiles), { rows: 2, cols: 3 });
  assert.deepEqual(tileIndex(tiles), [[0, 1, 2], [3, 4, 5]]);
  assert.deepEqual(span([2, 5]), [2, 3, 4]);
  assert.deepEqual(indexRuns([0, 2, 3, 5, 6, 7, 8, 10]), [[0, 0], [2, 2], [3, 3], [5, 8], [10, 10]]);
  assert.deepEqual(indexRuns([]), []);
  assert.deepEqual(rowMaxima([[1, null, 4], [null, null, null], [-2, -3, null]]), [4, null, -2]);
});

test('the rescale factor is exp(m_old − m_new); 0 from −∞ (nothing to keep); 1 while the row has seen nothing', () => {
  close(rescaleFactor(1, 3), Math.exp(-2));
  assert.equal(rescaleFactor(2, 2), 1);
  assert.equal(rescaleFactor(null, 0.5), 0);
  assert.equal(rescaleFactor(null, null), 1);
});

test('each forward tile: the state before it, each row kind and factor, recomputed from the m values', () => {
  const answer = handAnswer();
  const first = forwardStep(answer, 0);
  assert.deepEqual(first.before.m, [null, null]);
  assert.deepEqual(first.before.l, [0, 0]);
  assert.deepEqual(first.kinds, ['first', 'first']);
  assert.deepEqual(first.factors, [0, 0]);
  assert.equal(first.last, false);

  const second = forwardStep(answer, 1);
  assert.deepEqual(second.before.m, [1, 2]); // the previous tile's state
  assert.deepEqual(second.kinds, ['grew', 'same']);
  close(second.factors[0], Math.exp(1 - 3));
  assert.equal(second.factors[1], 1);
  assert.deepEqual(second.maxima, [3, 1]);

  const third = forwardStep(answer, 2);
  assert.deepEqual(third.kinds, ['same', 'grew']); // q0's score is hidden here: its maximum stays 3
  assert.equal(third.factors[0], 1);
  close(third.factors[1], Math.exp(2 - 5));
  assert.deepEqual(third.maxima, [null, 5]);
  assert.equal(third.last, true);
});

/** Every claim of a forward caption, checked against the tiles' m values (not against forwardStep's). */
function checkCaption(answer, i) {
  const tile = answer.tiles[i];
  const previous = i > 0 && answer.tiles[i - 1].row_block === tile.row_block ? answer.tiles[i - 1] : null;
  const mOld = (row) => (previous ? previous.m[row - tile.rows[0]] : null);
  const mNew = (row) => tile.m[row - tile.rows[0]];
  const items = forwardCaption(forwardStep(answer, i));
  for (const item of items) {
    if (item.key === 'flash.say.grew') {
      item.rows.forEach((row, n) => {
        assert.ok(mOld(row) !== null && mNew(row) > mOld(row), `row ${row} did not grow`);
        close(item.factors[n], Math.exp(mOld(row) - mNew(row)));
        assert.ok(item.factors[n] < 1);
      });
    } else if (item.key === 'flash.say.same') {
      for (const row of item.rows) assert.ok(mOld(row) !== null && mOld(row) === mNew(row));
    } else if (item.key === 'flash.say.first') {
      for (const row of item.rows) assert.ok(mOld(row) === null && mNew(row) !== null);
    } else if (item.key === 'flash.say.hidden') {
      for (const row of item.rows) assert.ok(mNew(row) === null);
    } else if (item.key === 'flash.say.skipped') {
      assert.ok(tile.scores.every((row) => row.every((s) => s === null)));
    } else if (item.key === 'flash.say.done') {
      assert.equal(tile.col_block, gridOf(answer.tiles).cols - 1);
    } else {
      assert.fail(`unknown caption ${item.key}`);
    }
  }
  // and every row of a tile that was not skipped is named exactly once by grew / same / first / hidden
  if (!tile.skipped) {
    const named = items.filter((item) => item.key !== 'flash.say.done').flatMap((item) => item.rows).sort((a, b) => a - b);
    assert.deepEqual(named, span(tile.rows));
  }
  return items.map((item) => item.key);
}

test('a caption says only what the m values show', () => {
  const answer = handAnswer();
  assert.deepEqual(checkCaption(answer, 0), ['flash.say.first']);
  assert.deepEqual(checkCaption(answer, 1), ['flash.say.grew', 'flash.say.same']);
  assert.deepEqual(checkCaption(answer, 2), ['flash.say.grew', 'flash.say.same', 'flash.say.done']);
  const grew = forwardCaption(forwardStep(answer, 2))[0];
  assert.deepEqual(grew.rows, [1]);
  close(grew.factors[0], Math.exp(-3));
});

test('a skipped tile (every score hidden) changes nothing: factor 1, and its caption says so', () => {
  // causal, Br = 1, Bc = 1 on two tokens: tile (0, 1) is hidden, tile (1, 0) is the second row's first key
  const tiles = [
    { row_block: 0, col_block: 0, rows: [0, 1], cols: [0, 1], skipped: false, scores: [[0.5]], m: [0.5], l: [1], o: [[1]] },
    { row_block: 0, col_block: 1, rows: [0, 1], cols: [1, 2], skipped: true, scores: [[null]], m: [0.5], l: [1], o: [[1]] },
    { row_block: 1, col_block: 0, rows: [1, 2], cols: [0, 1], skipped: false, scores: [[0.25]], m: [0.25], l: [1], o: [[1]] },
    { row_block: 1, col_block: 1, rows: [1, 2], cols: [1, 2], skipped: false, scores: [[-1]], m: [0.25], l: [1.2], o: [[2]] },
  ];
  const answer = { q: [[1], [1]], k: [[1], [1]], v: [[1], [2]], tiles, scale: 1 };
  const skipped = forwardStep(answer, 1);
  assert.deepEqual(skipped.factors, [1]);
  assert.deepEqual(checkCaption(answer, 1), ['flash.say.skipped', 'flash.say.done']);
  assert.deepEqual(checkCaption(answer, 2), ['flash.say.first']); // a new query block starts from −∞
  assert.deepEqual(checkCaption(answer, 3), ['flash.say.same', 'flash.say.done']);
});

test('a row whose keys so far are all hidden is said to have seen nothing yet', () => {
  const tiles = [{ row_block: 0, col_block: 0, rows: [0, 2], cols: [0, 1], skipped: false, scores: [[null], [1]], m: [null, 1], l: [0, 1], o: [[0], [3]] },
    { row_block: 0, col_block: 1, rows: [0, 2], cols: [1, 2], skipped: false, scores: [[2], [0]], m: [2, 1], l: [1, 1.3], o: [[4], [3.5]] }];
  const answer = { q: [[1], [1]], k: [[1], [1]], v: [[3], [4]], tiles, scale: 1 };
  assert.deepEqual(checkCaption(answer, 0), ['flash.say.first', 'flash.say.hidden']);
  assert.deepEqual(checkCaption(answer, 1), ['flash.say.first', 'flash.say.same', 'flash.say.done']);
});

test('fast memory: the tile real sizes, counted by hand, against L × S', () => {
  // L = 5 queries, S = 7 keys, d_k = 2, d_v = 3; the last tile of Br = 2, Bc = 3 is 1 × 1
  const answer = { q: Array(5).fill([0, 0]), k: Array(7).fill([0, 0]), v: Array(7).fill([0, 0, 0]) };
  const full = fastMemory(answer, { rows: [0, 2], cols: [0, 3] });
  assert.deepEqual(full.parts, { q: 4, k: 6, v: 9, s: 6, ml: 4, o: 6 });
  assert.equal(full.total, 35);
  assert.equal(full.scores, 6);
  assert.equal(full.full, 35);
  const corner = fastMemory(answer, { rows: [4, 5], cols: [6, 7] });
  assert.equal(corner.scores, 1);
  assert.equal(corner.total, 2 + 2 + 3 + 1 + 2 + 3);
  const back = fastMemory(answer, { rows: [0, 2], cols: [0, 3] }, true);
  assert.deepEqual(back.parts, { q: 4, k: 6, v: 9, dO: 6, d: 2, ml: 4, p: 6, ds: 6, dq: 4, dk: 6, dv: 9 });
  assert.equal(back.fullBackward, 70);
});

test('the backward: dQ, dK, dV summed tile by tile, worked out by hand', () => {
  // one query q = [1], keys k = [1], [2], scale 0.5, dO = [2]; tiles of one key: A 0.25 then 0.75, dS −0.5 then 0.5
  const answer = {
    q: [[1]], k: [[1], [2]], v: [[10], [20]], scale: 0.5, output: [[17.5]],
    backward: {
      upstream: [[2]],
      tiles: [
        { row_block: 0, col_block: 0, rows: [0, 1], cols: [0, 1], skipped: false, p: [[0.25]], ds: [[-0.5]] },
        { row_block: 0, col_block: 1, rows: [0, 1], cols: [1, 2], skipped: false, p: [[0.75]], ds: [[0.5]] },
      ],
    },
  };
  const after0 = gradientsAfter(answer, 0);
  assert.deepEqual(after0, { dq: [[-0.25]], dk: [[-0.25], [0]], dv: [[0.5], [0]] });
  const after1 = gradientsAfter(answer, 1);
  // dQ = 0.5 · (−0.5 · 1 + 0.5 · 2) = 0.25; dK = 0.5 · dS · q; dV = A · dO
  assert.deepEqual(after1, { dq: [[0.25]], dk: [[-0.25], [0.25]], dv: [[0.5], [1.5]] });
  assert.deepEqual(rowDots(answer.backward.upstream, answer.output), [35]);
  assert.deepEqual(backwardCaption(answer, 0).map((item) => item.key), ['flash.back.say.tile', 'flash.back.say.dkvDone']);
  assert.deepEqual(backwardCaption(answer, 1), [
    { key: 'flash.back.say.tile' }, { key: 'flash.back.say.dqDone', rows: [0] }, { key: 'flash.back.say.dkvDone', keys: [1] },
  ]);
  // a skipped tile adds nothing
  answer.backward.tiles[1].skipped = true;
  assert.deepEqual(gradientsAfter(answer, 1), after0);
  assert.equal(backwardCaption(answer, 1)[0].key, 'flash.back.say.skipped');
});

test('maxAbsDiff skips hidden entries', () => {
  assert.equal(maxAbsDiff([[1, null], [3, 4]], [[1.5, null], [3, 2]]), 2);
});

// ---- the URL ----------------------------------------------------------------------------------------------

const EXAMPLE = Object.freeze({
  queries: [[1, 0, 2, 1], [0, 1, 1, 2]], keys: [[1, 0, 0, 1], [0, 1, 1, 0]], values: [[1, 2, 3, 4], [5, 6, 7, 8]], heads: 2,
});
const read = (query) => readFlashState(new URLSearchParams(query), EXAMPLE);

test('the URL: the worked example and the defaults write nothing; br, bc, backward, tile read back', () => {
  const plain = read('');
  assert.deepEqual([plain.br, plain.bc, plain.tile, plain.backward, plain.causal, plain.head], [2, 2, 0, false, false, 0]);
  assert.deepEqual(plain.weights, identityWeights(4));
  assert.equal(writeFlashState(plain, EXAMPLE).toString(), '');
  const state = read('causal=1&head=1&br=3&bc=1&backward=1&tile=7&hidden=1');
  assert.deepEqual([state.br, state.bc, state.tile, state.backward, state.causal, state.head, state.hidden], [3, 1, 7, true, true, 1, [1]]);
  assert.equal(writeFlashState(state, EXAMPLE).toString(), 'causal=1&hidden=1&backward=1&head=1&br=3&bc=1&tile=7');
  assert.deepEqual(read(writeFlashState({ ...state, queries: [[0.5, 1, 2, 3]] }, EXAMPLE).toString()).queries, [[0.5, 1, 2, 3]]);
});

test('a block size that cannot be read falls back to 2 and is named', () => {
  for (const text of ['0', '65', 'x', '1.5', '']) {
    const state = read(`br=${text}&bc=4`);
    assert.equal(state.br, 2, text);
    assert.equal(state.bc, 4);
    assert.deepEqual(state.unreadable, ['block_rows'], text);
  }
  assert.equal(read('bc=64').bc, 64);
});

test('the links between /toy and /flash keep the layer and its inputs, and only them', () => {
  const flash = read('q=1,2,3,4&causal=1&hidden=0&head=1&br=3&bc=1&backward=1&tile=4');
  assert.equal(toyParams(flash, EXAMPLE).toString(), 'q=1,2,3,4&causal=1&hidden=0&head=1');
  const toy = { ...flash, variant: 'gumbel', positions: 'rope', compare: true, step: 'softmax', query: 1 };
  assert.equal(flashParams(toy, EXAMPLE).toString(), 'q=1,2,3,4&causal=1&hidden=0&head=1');
  const body = flashRequest(flash);
  assert.deepEqual(Object.keys(body).sort(), ['backward', 'block_cols', 'block_rows', 'causal', 'head', 'hidden_keys', 'keys',
    'n_heads', 'queries', 'values', 'weights']);
  assert.deepEqual([body.block_rows, body.block_cols, body.head, body.backward, body.hidden_keys], [3, 1, 1, true, [0]]);
});

test('numberFormat: one way of writing the numbers of a table, so no row or column mixes "14" and "14.0000"', () => {
  // O / ℓ of the worked example: 13 is exact, 13.999999999999998 is 14 up to float64 rounding
  const table = [[13.794, 14.794], [13, 14 - 2e-15], [13.679, 14.679]];
  const written = table.map((row) => row.map(numberFormat(table)));
  const decimals = (text) => (text.split('.')[1] ?? '').length;
  for (const row of written) assert.deepEqual(row.map(decimals), [4, 4]);
  for (let c = 0; c < 2; c += 1) assert.deepEqual(written.map((row) => decimals(row[c])), [4, 4, 4]);
  written.flat().forEach((text, i) => assert.ok(Math.abs(Number(text) - table.flat()[i]) <= 5e-5)); // each is its value
  // a table of whole numbers keeps them whole; hidden values are −∞, a minus is "−", never "−0.0000"
  assert.deepEqual([[1, -2], [null, 0]].map((row) => row.map(numberFormat([[1, -2], [null, 0]]))), [['1', '−2'], ['−∞', '0']]);
  assert.deepEqual([-1e-9, 0.5, null].map(numberFormat([-1e-9, 0.5, null])), ['0.0000', '0.5000', '−∞']);
});

test('captionKey: a caption naming one row (or key) is worded for one, several for several', () => {
  const step = forwardStep(handAnswer(), 2); // q0 stays at 3, q1 grows from 2 to 5: one row each
  const keys = forwardCaption(step).map((item) => [item.key, item.rows.length, captionKey(item)]);
  assert.deepEqual(keys, [
    ['flash.say.grew', 1, 'flash.say.grew.one'],
    ['flash.say.same', 1, 'flash.say.same'], // "the row maximum stayed the same in …" reads for one and for several
    ['flash.say.done', 2, 'flash.say.done'],
  ]);
  assert.equal(captionKey({ key: 'flash.back.say.dkvDone', keys: [3] }), 'flash.back.say.dkvDone.one');
  assert.equal(captionKey({ key: 'flash.back.say.dqDone', rows: [0, 1] }), 'flash.back.say.dqDone');
  assert.equal(captionKey({ key: 'flash.back.say.tile' }), 'flash.back.say.tile');
  for (const key of ['grew', 'first', 'hidden', 'done'].map((k) => `flash.say.${k}`).concat(['flash.back.say.dqDone', 'flash.back.say.dkvDone'])) {
    assert.ok(has(captionKey({ key, rows: [0] })) && captionKey({ key, rows: [0] }) === `${key}.one`, key); // worded in the dictionary
  }
});
