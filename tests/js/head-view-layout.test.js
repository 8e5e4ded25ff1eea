// The head view's layout (static/js/views/head-view-layout.js): which lines are drawn, where, with which
// opacity and width, and what the view reports, checked against brute-force scans of the maps.
import './browser-globals.js';
import test from 'node:test';
import assert from 'node:assert/strict';

import {
  ALL, CUTOFF, INSET, LEVELS, LIMITS, LIMIT_DEFAULT, MAX_CANVAS, MAX_DRAWN, ROW, SPREAD, allLines, canvasSize, countLines, describeState, eachLineOf,
  emptyDrawing, headShift, keyMove, layerLines, levelOf, linesOf, planLines, sameSize, sameToken, scrollFor,
  selectionOf, sparseHead,
} from '../../static/js/views/head-view-layout.js';

/** A small deterministic generator (mulberry32), so that a failure can be replayed. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** An n x n attention map, rows summing to 1, peaked so that rows have weights on both sides of the cutoff. */
function attentionMap(n, rand) {
  const map = new Float32Array(n * n);
  for (let q = 0; q < n; q += 1) {
    let sum = 0;
    for (let k = 0; k < n; k += 1) {
      const v = Math.exp(6 * rand()) - 1;
      map[q * n + k] = v;
      sum += v;
    }
    for (let k = 0; k < n; k += 1) map[q * n + k] /= sum;
  }
  return map;
}

/** An n x n map whose rows each give one key 0.2 to 0.9 and spread the rest: lines of every opacity. */
function peakedMap(n, rand) {
  const map = attentionMap(n, rand);
  for (let q = 0; q < n; q += 1) {
    const peak = 0.2 + 0.7 * rand();
    const k = Math.floor(rand() * n);
    for (let j = 0; j < n; j += 1) map[q * n + j] *= 1 - peak;
    map[q * n + k] += peak;
  }
  return map;
}

/** Every (head, query, key, weight) of at least the cutoff in the visible heads, as "h,q,k" -> weight. */
function bruteLines(maps, heads, n, visible, { query = null, key = null } = {}) {
  const out = new Map();
  maps.forEach((map, h) => {
    if (!visible.has(heads[h])) return;
    for (let q = 0; q < n; q += 1) {
      for (let k = 0; k < n; k += 1) {
        if ((query === null || q === query) && (key === null || k === key) && map[q * n + k] >= CUTOFF) {
          out.set(`${heads[h]},${q},${k}`, map[q * n + k]);
        }
      }
    }
  });
  return out;
}

function drawnLines(layer, drawing) {
  const lines = linesOf(layer, drawing);
  const out = new Map();
  for (let i = 0; i < lines.head.length; i += 1) {
    const id = `${lines.head[i]},${lines.query[i]},${lines.key[i]}`;
    assert.ok(!out.has(id), `line ${id} drawn twice`);
    out.set(id, lines.weight[i]);
  }
  return out;
}

const sameKeys = (a, b) => assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort());

test('sparseHead keeps exactly the weights of at least the cutoff, by row and by column', () => {
  const n = 4;
  // 0.01 itself is kept, a weight just below it is not
  const map = [
    0.5, 0.49, 0.01, 0,
    0.009999, 0.99, 0, 0.000001,
    0.25, 0.25, 0.25, 0.25,
    0, 0, 0, 1,
  ];
  const s = sparseHead(map, n);
  assert.equal(s.count, 9);
  assert.deepEqual([...s.query], [0, 0, 0, 1, 2, 2, 2, 2, 3]);
  assert.deepEqual([...s.key], [0, 1, 2, 1, 0, 1, 2, 3, 3]);
  assert.deepEqual([...s.rowStart], [0, 3, 4, 8, 9]);
  assert.deepEqual([...s.keyStart], [0, 2, 5, 7, 9]);
  // column by column, each in query order: key 0 <- q0, q2; key 1 <- q0, q1, q2; key 2 <- q0, q2; key 3 <- q2, q3
  assert.deepEqual([...s.byKey].map((e) => [s.query[e], s.key[e]]),
    [[0, 0], [2, 0], [0, 1], [1, 1], [2, 1], [0, 2], [2, 2], [2, 3], [3, 3]]);
  assert.equal(s.weight[2], Math.fround(0.01));
});

test('sparseHead agrees with a scan of a random map, row by row and column by column', () => {
  const n = 37;
  const map = attentionMap(n, random(7));
  const s = sparseHead(map, n);
  for (let q = 0; q < n; q += 1) {
    const expected = [];
    for (let k = 0; k < n; k += 1) if (map[q * n + k] >= CUTOFF) expected.push([q, k, map[q * n + k]]);
    const got = [];
    eachLineOf(s, { mode: 'query', index: q }, (e) => got.push([s.query[e], s.key[e], s.weight[e]]));
    assert.deepEqual(got, expected);
  }
  for (let k = 0; k < n; k += 1) {
    const expected = [];
    for (let q = 0; q < n; q += 1) if (map[q * n + k] >= CUTOFF) expected.push([q, k]);
    const got = [];
    eachLineOf(s, { mode: 'key', index: k }, (e) => got.push([s.query[e], s.key[e]]));
    assert.deepEqual(got, expected);
  }
  let all = 0;
  eachLineOf(s, ALL, () => { all += 1; });
  assert.equal(all, s.count);
  assert.ok(s.count > n && s.count < n * n, `the map should straddle the cutoff (${s.count} lines)`);
});

test('countLines counts the selection in the visible heads only', () => {
  const n = 20;
  const rand = random(3);
  const heads = [0, 3, 5];
  const maps = heads.map(() => attentionMap(n, rand));
  const layer = layerLines(maps, heads, n);
  for (const visible of [new Set(heads), new Set([3]), new Set([0, 5]), new Set()]) {
    assert.equal(countLines(layer, visible, ALL), bruteLines(maps, heads, n, visible).size);
    for (const index of [0, 7, 19]) {
      assert.equal(countLines(layer, visible, { mode: 'query', index }), bruteLines(maps, heads, n, visible, { query: index }).size);
      assert.equal(countLines(layer, visible, { mode: 'key', index }), bruteLines(maps, heads, n, visible, { key: index }).size);
    }
  }
});

test('with a limit, every token\'s lines are each query token\'s strongest per head, counted and drawn', () => {
  const n = 30;
  const rand = random(17);
  const heads = [1, 4, 6];
  const maps = heads.map(() => attentionMap(n, rand));
  maps[0].fill(0, 0, n); // query 0 of head 1 looks at key 5 and 6 only, equally: a tie, broken in key order
  maps[0][5] = 0.5;
  maps[0][6] = 0.5;
  const layer = layerLines(maps, heads, n);
  assert.ok(LIMITS.includes(LIMIT_DEFAULT) && LIMITS.includes(Infinity));
  assert.equal(allLines(Infinity), ALL);
  for (const visible of [new Set(heads), new Set([4])]) {
    for (const limit of [1, 3, 1000]) {
      // brute force: each visible head's row, sorted by weight (ties by key), the first `limit` of weight >= CUTOFF
      const expected = new Map();
      maps.forEach((map, h) => {
        if (!visible.has(heads[h])) return;
        for (let q = 0; q < n; q += 1) {
          const row = [];
          for (let k = 0; k < n; k += 1) if (map[q * n + k] >= CUTOFF) row.push(k);
          row.sort((a, b) => map[q * n + b] - map[q * n + a] || a - b);
          for (const k of row.slice(0, limit)) expected.set(`${heads[h]},${q},${k}`, map[q * n + k]);
        }
      });
      const chosen = allLines(limit);
      assert.equal(countLines(layer, visible, chosen), expected.size);
      const plan = planLines({ layer, visible, chosen, top: 0, height: n * ROW, width: 100 });
      sameKeys(drawnLines(layer, plan.drawing), expected);
      if (limit < 1000) assert.ok(expected.size <= limit * n * visible.size);
    }
  }
  const one = planLines({ layer, visible: new Set([1]), chosen: allLines(1), top: 0, height: n * ROW, width: 100 });
  const lines = linesOf(layer, one.drawing);
  const first = [...lines.query].indexOf(0);
  assert.equal(lines.key[first], 5);
  assert.equal([...lines.query].filter((q) => q === 0).length, 1);
  // a hovered token shows all its lines whatever the limit
  assert.equal(countLines(layer, new Set(heads), { mode: 'query', index: 3 }),
    bruteLines(maps, heads, n, new Set(heads), { query: 3 }).size);
});

test('the hovered token wins over the clicked one; sameToken compares side and index', () => {
  assert.deepEqual(selectionOf(null, null), { mode: 'all', index: null, limit: Infinity });
  assert.deepEqual(selectionOf(null, null, 3), { mode: 'all', index: null, limit: 3 });
  assert.deepEqual(selectionOf(null, { side: 'key', index: 4 }, 3), { mode: 'key', index: 4 }); // a token's lines: all
  assert.deepEqual(selectionOf(null, { side: 'key', index: 4 }), { mode: 'key', index: 4 });
  assert.deepEqual(selectionOf({ side: 'query', index: 2 }, { side: 'key', index: 4 }), { mode: 'query', index: 2 });
  assert.ok(sameToken(null, null));
  assert.ok(sameToken({ side: 'query', index: 0 }, { side: 'query', index: 0 }));
  assert.ok(!sameToken({ side: 'query', index: 0 }, { side: 'key', index: 0 }));
  assert.ok(!sameToken({ side: 'query', index: 0 }, null));
  assert.ok(!sameToken(null, { side: 'query', index: 1 }));
});

test('the canvases are as tall as the rows or the viewport, and no side exceeds MAX_CANVAS device px', () => {
  assert.deepEqual(canvasSize({ rows: 10, viewHeight: 400, laneWidth: 300, pixelRatio: 2 }), { width: 300, height: 180, dpr: 2 });
  assert.deepEqual(canvasSize({ rows: 512, viewHeight: 400, laneWidth: 300, pixelRatio: 2 }), { width: 300, height: 400, dpr: 2 });
  // not laid out yet: the rows' height, at least 1 px each way, ratio 1 by default
  assert.deepEqual(canvasSize({ rows: 3, viewHeight: 0, laneWidth: 0, pixelRatio: undefined }), { width: 1, height: 54, dpr: 1 });
  assert.deepEqual(canvasSize({ rows: 0, viewHeight: 0, laneWidth: 10, pixelRatio: 1 }), { width: 10, height: 1, dpr: 1 });
  const wide = canvasSize({ rows: 10, viewHeight: 400, laneWidth: 12000, pixelRatio: 3 });
  assert.equal(wide.dpr, MAX_CANVAS / 12000);
  assert.ok(Math.round(wide.width * wide.dpr) <= MAX_CANVAS);
  assert.ok(sameSize(wide, { ...wide }));
  assert.ok(!sameSize(wide, { ...wide, dpr: 1 }));
});

test('opacity levels and the heads\' spread around a row\'s middle', () => {
  assert.equal(levelOf(CUTOFF), 1);
  assert.equal(levelOf(0.001), 1); // never invisible
  assert.equal(levelOf(0.5), LEVELS / 2);
  assert.equal(levelOf(1), LEVELS);
  assert.equal(levelOf(0.09), 5); // 4.5 rounds up
  assert.equal(headShift(0, 1), 0);
  assert.equal(headShift(0, 12), -0.5 * SPREAD * ROW);
  assert.equal(headShift(11, 12), 0.5 * SPREAD * ROW);
  assert.equal(headShift(1, 3), 0);
});

test('planLines draws every line of a small layer, grouped by head and then by rising opacity', () => {
  const n = 3;
  const heads = [2, 7];
  const maps = [
    Float32Array.from([0.7, 0.3, 0, 0.5, 0.005, 0.495, 0.1, 0.1, 0.8]),
    Float32Array.from([1, 0, 0, 0.3, 0.7, 0, 0.02, 0.48, 0.5]),
  ];
  const layer = layerLines(maps, heads, n);
  const plan = planLines({ layer, visible: new Set(heads), chosen: ALL, top: 0, height: n * ROW, width: 200 });
  assert.equal(plan.lineWidth, 1);
  assert.equal(plan.x0, INSET);
  assert.equal(plan.x1, 200 - INSET);
  assert.equal(plan.drawing.inView, 13);
  assert.equal(plan.drawing.from, CUTOFF);
  sameKeys(drawnLines(layer, plan.drawing), bruteLines(maps, heads, n, new Set(heads)));

  // groups: head position, then opacity upwards; each group's ends are its lines' row middles plus the head's shift
  assert.deepEqual(plan.groups.map((g) => [g.head, Math.round(g.alpha * LEVELS)]), [
    [0, 5], [0, 15], [0, 25], [0, 35], [0, 40], [1, 1], [1, 15], [1, 24], [1, 25], [1, 35], [1, 50],
  ]);
  const middle = (row, h) => (row + 0.5) * ROW + headShift(h, 2);
  const head0 = plan.groups.find((g) => g.head === 0 && g.alpha === 25 / LEVELS);
  // weights 0.5 (q1 -> k0) and 0.495 (q1 -> k2) share opacity 25, in entry order
  assert.deepEqual([...head0.ends], [middle(1, 0), middle(0, 0), middle(1, 0), middle(2, 0)]);
  const strokes = plan.groups.reduce((sum, g) => sum + g.ends.length / 2, 0);
  assert.equal(strokes, plan.drawing.entries.length);

  // the drawing lists the lines in stroke order: group by group
  const lines = linesOf(layer, plan.drawing);
  let i = 0;
  for (const group of plan.groups) {
    for (let j = 0; j < group.ends.length; j += 2, i += 1) {
      assert.equal(lines.head[i], heads[group.head]);
      assert.equal(group.ends[j], middle(lines.query[i], group.head));
      assert.equal(group.ends[j + 1], middle(lines.key[i], group.head));
      assert.equal(levelOf(lines.weight[i]) / LEVELS, group.alpha);
    }
  }
});

test('planLines keeps the lines that cross the rows in view, and one token\'s lines are wider', () => {
  const n = 40;
  const rand = random(11);
  const heads = [0, 1, 2];
  const maps = heads.map(() => attentionMap(n, rand));
  const layer = layerLines(maps, heads, n);
  const visible = new Set([0, 2]);
  const top = 10 * ROW;
  const height = 8 * ROW;
  const crosses = (q, k) => {
    const yq = (q + 0.5) * ROW;
    const yk = (k + 0.5) * ROW;
    return !((yq < top && yk < top) || (yq > top + height && yk > top + height));
  };
  for (const chosen of [ALL, { mode: 'query', index: 3 }, { mode: 'query', index: 14 }, { mode: 'key', index: 39 }]) {
    const plan = planLines({ layer, visible, chosen, top, height, width: 100 });
    const scope = chosen.mode === 'all' ? {} : { [chosen.mode]: chosen.index };
    const expected = new Map([...bruteLines(maps, heads, n, visible, scope)].filter(([id]) => {
      const [, q, k] = id.split(',').map(Number);
      return crosses(q, k);
    }));
    assert.ok(expected.size > 0);
    sameKeys(drawnLines(layer, plan.drawing), expected);
    assert.equal(plan.drawing.inView, expected.size);
    assert.equal(plan.lineWidth, chosen.mode === 'all' ? 1 : 1.5);
  }
  // hidden heads and an empty layer draw nothing
  assert.equal(planLines({ layer, visible: new Set(), chosen: ALL, top, height, width: 100 }).groups.length, 0);
  const empty = planLines({ layer: layerLines([], [], 0), visible: new Set(), chosen: ALL, top: 0, height: 1, width: 1 });
  assert.deepEqual(empty.drawing, emptyDrawing());
  assert.deepEqual(empty.groups, []);
});

test('over MAX_DRAWN lines in view, planLines draws the strongest opacity levels that fit and says from which weight', () => {
  const n = 128;
  const rand = random(5);
  const heads = [0, 1, 2, 3];
  const maps = heads.map(() => peakedMap(n, rand));
  const layer = layerLines(maps, heads, n);
  const visible = new Set(heads);
  const all = bruteLines(maps, heads, n, visible);
  assert.ok(all.size > 2 * MAX_DRAWN, `${all.size} lines`);
  const plan = planLines({ layer, visible, chosen: ALL, top: 0, height: n * ROW, width: 300 });
  const drawn = drawnLines(layer, plan.drawing);
  assert.equal(plan.drawing.inView, all.size);
  assert.ok(drawn.size > 0 && drawn.size <= MAX_DRAWN, `${drawn.size} drawn`);
  assert.ok(plan.drawing.from > CUTOFF);
  const lowest = Math.round(plan.drawing.from * LEVELS + 0.5); // from = (lowest - 0.5) / LEVELS
  assert.equal(plan.drawing.from, (lowest - 0.5) / LEVELS);
  // exactly the lines of level >= lowest, and one more level would not have fitted
  const kept = new Map([...all].filter(([, w]) => levelOf(w) >= lowest));
  sameKeys(drawn, kept);
  assert.ok([...all.values()].filter((w) => levelOf(w) >= lowest - 1).length > MAX_DRAWN);
  for (const w of drawn.values()) assert.ok(w >= plan.drawing.from, `${w} below ${plan.drawing.from}`);
  const summary = describeState(ALL, visible, all.size, plan.drawing);
  assert.equal(summary.cut, true);
  assert.equal(summary.drawn, String(drawn.size));
});

test('MAX_DRAWN lines in view are all drawn; one more cuts the weakest level', () => {
  const n = 50;
  /** Each row gives `width(q)` keys equal weights: opacity level 2 (1/31 to 1/30 of the row). */
  const uniform = (width) => {
    const map = new Float32Array(n * n);
    for (let q = 0; q < n; q += 1) for (let k = 0; k < width(q); k += 1) map[q * n + k] = 1 / width(q);
    return map;
  };
  const exact = layerLines([uniform(() => 30)], [0], n);
  const visible = new Set([0]);
  const all = planLines({ layer: exact, visible, chosen: ALL, top: 0, height: n * ROW, width: 10 });
  assert.equal(all.drawing.inView, MAX_DRAWN);
  assert.equal(all.drawing.entries.length, MAX_DRAWN);
  assert.equal(all.drawing.from, CUTOFF);
  const over = layerLines([uniform((q) => (q === 0 ? 31 : 30))], [0], n);
  const cut = planLines({ layer: over, visible, chosen: ALL, top: 0, height: n * ROW, width: 10 });
  assert.equal(cut.drawing.inView, MAX_DRAWN + 1);
  assert.equal(cut.drawing.entries.length, 0); // every line is of level 2, so none fits
  assert.equal(cut.drawing.from, 2.5 / LEVELS);
});

test('linesOf and describeState report a drawing in head numbers, and an uncut drawing is not cut', () => {
  const n = 5;
  const heads = [9, 4];
  const rand = random(1);
  const maps = heads.map(() => attentionMap(n, rand));
  const layer = layerLines(maps, heads, n);
  const visible = new Set([9]);
  const chosen = { mode: 'key', index: 2 };
  const plan = planLines({ layer, visible, chosen, top: 0, height: n * ROW, width: 50 });
  const lines = linesOf(layer, plan.drawing);
  assert.ok(lines.head.length > 0);
  assert.ok([...lines.head].every((h) => h === 9));
  assert.ok([...lines.key].every((k) => k === 2));
  for (let i = 0; i < lines.head.length; i += 1) assert.equal(lines.weight[i], maps[0][lines.query[i] * n + 2]);
  assert.deepEqual(describeState(chosen, new Set([9, 4, 0]), 3, plan.drawing), {
    mode: 'key', token: '2', heads: '0,4,9', lines: '3', drawn: String(lines.head.length), from: String(CUTOFF), cut: false,
  });
  assert.deepEqual(describeState(ALL, new Set(), 0, emptyDrawing()), {
    mode: 'all', token: '', heads: '', lines: '0', drawn: '0', from: '0.01', cut: false,
  });
});

test('keyMove steps through a column, jumps to its ends and crosses to the other column', () => {
  assert.deepEqual(keyMove('ArrowDown', 3, 10), { column: 'same', index: 4 });
  assert.deepEqual(keyMove('ArrowUp', 0, 10), { column: 'same', index: 0 });
  assert.deepEqual(keyMove('PageDown', 5, 10), { column: 'same', index: 9 });
  assert.deepEqual(keyMove('PageUp', 15, 40), { column: 'same', index: 5 });
  assert.deepEqual(keyMove('Home', 7, 10), { column: 'same', index: 0 });
  assert.deepEqual(keyMove('End', 2, 10), { column: 'same', index: 9 });
  assert.deepEqual(keyMove('ArrowLeft', 6, 10), { column: 'query', index: 6 });
  assert.deepEqual(keyMove('ArrowRight', 6, 10), { column: 'key', index: 6 });
  assert.equal(keyMove('Enter', 6, 10), null);
  assert.equal(keyMove('a', 6, 10), null);
  assert.equal(keyMove('toString', 6, 10), null);
});

test('scrollFor centres a row out of view and leaves a row in view alone', () => {
  assert.equal(scrollFor(5, 0, 360), null); // rows 0..19 in view
  assert.equal(scrollFor(19, 0, 360), null);
  assert.equal(scrollFor(20, 0, 360), 20 * ROW - 180);
  assert.equal(scrollFor(300, 0, 360), 300 * ROW - 180);
  assert.equal(scrollFor(2, 1000, 360), 0);
  assert.equal(scrollFor(100, 100 * ROW + 1, 360), 100 * ROW - 180);
});
