// The /flash page's arithmetic, from a POST /api/v1/flash answer: where each tile sits in the grid of
// query blocks × key blocks, the state a tile starts from (the previous tile of its query block), the
// rescale factor exp(m_old − m_new) of each row, what fast memory holds during a tile, the backward's
// running dQ, dK, dV, and what each tile's caption may truly say. Pure: no DOM, no fetch, no words
// (captions are returned as dictionary keys with their numbers; the page words them).
//
// Hidden scores and a row maximum that has not seen a visible key are null in the answer (−∞).

/** The grid's size: how many query blocks (rows) and key blocks (columns) the tiles cover. */
export function gridOf(tiles) {
  let rows = 0;
  let cols = 0;
  for (const tile of tiles) {
    rows = Math.max(rows, tile.row_block + 1);
    cols = Math.max(cols, tile.col_block + 1);
  }
  return { rows, cols };
}

/** Each tile's index in `tiles` by its place: index[row_block][col_block]. */
export function tileIndex(tiles) {
  const { rows, cols } = gridOf(tiles);
  const index = Array.from({ length: rows }, () => new Array(cols).fill(-1));
  tiles.forEach((tile, i) => {
    index[tile.row_block][tile.col_block] = i;
  });
  return index;
}

/** [start, end) as the indices it covers. */
export const span = ([start, end]) => Array.from({ length: end - start }, (_, i) => start + i);

/** Sorted indices as runs [first, last]; a run of two is written as two (so 2, 3 reads "2 and 3", 5…9 as a range). */
export function indexRuns(indices) {
  const runs = [];
  for (let i = 0; i < indices.length;) {
    let j = i;
    while (j + 1 < indices.length && indices[j + 1] === indices[j] + 1) j += 1;
    if (j - i >= 2) runs.push([indices[i], indices[j]]);
    else for (let n = i; n <= j; n += 1) runs.push([indices[n], indices[n]]);
    i = j + 1;
  }
  return runs;
}

/** exp(a − b) for maxima that may be −∞ (null); 1 when b is −∞ too (the row has seen nothing: nothing to rescale). */
export function rescaleFactor(mOld, mNew) {
  if (mNew === null) return 1;
  if (mOld === null) return 0; // exp(−∞): the old ℓ and O are 0 anyway
  return Math.exp(mOld - mNew);
}

/** The largest visible score of each row of a tile's scores (null: every score of the row hidden). */
export function rowMaxima(scores) {
  return scores.map((row) => row.reduce((top, s) => (s === null ? top : top === null ? s : Math.max(top, s)), null));
}

/**
 * Forward tile `i`: the tile, the state before it (the previous tile of the same query block; at a
 * block's first tile m = −∞, ℓ = 0, O = 0) and after it, per row the tile's maximum, the rescale factor
 * exp(m_old − m_new) and what happened to the row:
 *   'grew'   the maximum grew (ℓ and O were rescaled by a factor below 1),
 *   'first'  the row's first visible key (m starts; the old ℓ and O were 0),
 *   'same'   the maximum stayed (factor 1: ℓ and O only add this tile's terms),
 *   'hidden' every key of the row so far is hidden (nothing yet),
 * and whether this is the last key block of its query block (then O / ℓ is the block's output).
 */
export function forwardStep(answer, i) {
  const { tiles } = answer;
  const tile = tiles[i];
  const previous = i > 0 && tiles[i - 1].row_block === tile.row_block ? tiles[i - 1] : null;
  const n = tile.rows[1] - tile.rows[0];
  const width = answer.v[0].length;
  const before = previous
    ? { m: previous.m, l: previous.l, o: previous.o }
    : { m: new Array(n).fill(null), l: new Array(n).fill(0), o: Array.from({ length: n }, () => new Array(width).fill(0)) };
  const maxima = rowMaxima(tile.scores);
  const factors = tile.m.map((mNew, r) => (tile.skipped ? 1 : rescaleFactor(before.m[r], mNew)));
  const kinds = tile.m.map((mNew, r) => {
    const mOld = before.m[r];
    if (mNew === null) return 'hidden';
    if (mOld === null) return 'first';
    return mNew > mOld ? 'grew' : 'same';
  });
  const { cols } = gridOf(tiles);
  return { index: i, tile, before, maxima, factors, kinds, last: tile.col_block === cols - 1 };
}

/** Rows (absolute query indices) of a step whose kind is `kind`. */
export function rowsOf(step, kind) {
  return step.kinds.flatMap((k, r) => (k === kind ? [step.tile.rows[0] + r] : []));
}

/**
 * What a forward tile's caption says, as dictionary keys with their numbers (true by construction;
 * tests recompute each claim from the answer):
 *   flash.say.skipped {}                         every score hidden: the tile is skipped, nothing changes
 *   flash.say.grew    {rows, factors}            the maximum grew in these rows: ℓ and O × these factors
 *   flash.say.first   {rows}                     these rows see their first visible key
 *   flash.say.same    {rows}                     the maximum stayed in these rows: factor 1
 *   flash.say.hidden  {rows}                     these rows have seen no visible key yet
 *   flash.say.done    {rows}                     the block's last key block: O / ℓ is the output of these rows
 */
export function forwardCaption(step) {
  const items = [];
  if (step.tile.skipped) {
    items.push({ key: 'flash.say.skipped', rows: span(step.tile.rows) });
  } else {
    const grew = rowsOf(step, 'grew');
    if (grew.length) {
      const factors = step.kinds.flatMap((k, r) => (k === 'grew' ? [step.factors[r]] : []));
      items.push({ key: 'flash.say.grew', rows: grew, factors });
    }
    for (const kind of ['first', 'same', 'hidden']) {
      const rows = rowsOf(step, kind);
      if (rows.length) items.push({ key: `flash.say.${kind}`, rows });
    }
  }
  if (step.last) items.push({ key: 'flash.say.done', rows: span(step.tile.rows) });
  return items;
}

/**
 * The numbers fast memory holds during tile `tile` (its real sizes: a last block may be shorter) against
 * the L × S matrix standard attention materialises. Forward: the Q block, K and V blocks, the tile's
 * scores (turned into exp(s − m) in place), m and ℓ of its rows, and its rows' running O. Backward: the
 * Q, K, V blocks, dO and D of its rows, m and ℓ, the tile's A and dS, and the dQ, dK, dV blocks it adds to;
 * standard attention's backward holds the L × S weights and their L × S gradient.
 */
export function fastMemory(answer, tile, backward = false) {
  const nr = tile.rows[1] - tile.rows[0];
  const nc = tile.cols[1] - tile.cols[0];
  const dk = answer.q[0].length;
  const dv = answer.v[0].length;
  const L = answer.q.length;
  const S = answer.k.length;
  const parts = backward
    ? { q: nr * dk, k: nc * dk, v: nc * dv, dO: nr * dv, d: nr, ml: 2 * nr, p: nr * nc, ds: nr * nc,
      dq: nr * dk, dk: nc * dk, dv: nc * dv }
    : { q: nr * dk, k: nc * dk, v: nc * dv, s: nr * nc, ml: 2 * nr, o: nr * dv };
  const total = Object.values(parts).reduce((a, b) => a + b, 0);
  const scores = nr * nc;
  const full = L * S;
  return { parts, total, scores, full, fullBackward: 2 * full, rows: nr, cols: nc, L, S };
}

const zeros = (rows, cols) => Array.from({ length: rows }, () => new Array(cols).fill(0));

/**
 * The backward's dQ, dK, dV after backward tile `i` (every tile up to it added, skipped ones add nothing):
 *   dV_block += Pᵀ · dO_rows,   dQ_rows += scale · dS · K_block,   dK_block += scale · dSᵀ · Q_rows.
 * From the answer's q, k, scale, upstream dO and each tile's A and dS.
 */
export function gradientsAfter(answer, i) {
  const { q, k, scale } = answer;
  const { tiles, upstream } = answer.backward;
  const dk = q[0].length;
  const dv = upstream[0].length;
  const dQ = zeros(q.length, dk);
  const dK = zeros(k.length, dk);
  const dV = zeros(k.length, dv);
  for (let t = 0; t <= i; t += 1) {
    const tile = tiles[t];
    if (tile.skipped) continue;
    const [r0, r1] = tile.rows;
    const [c0, c1] = tile.cols;
    for (let r = r0; r < r1; r += 1) {
      for (let c = c0; c < c1; c += 1) {
        const p = tile.p[r - r0][c - c0];
        const ds = tile.ds[r - r0][c - c0];
        for (let d = 0; d < dv; d += 1) dV[c][d] += p * upstream[r][d];
        for (let d = 0; d < dk; d += 1) {
          dQ[r][d] += scale * ds * k[c][d];
          dK[c][d] += scale * ds * q[r][d];
        }
      }
    }
  }
  return { dq: dQ, dk: dK, dv: dV };
}

/** D = rowsum(dO ⊙ O) of each row: the part of dA every weight's gradient subtracts. */
export function rowDots(upstream, output) {
  return upstream.map((row, r) => row.reduce((sum, x, d) => sum + x * output[r][d], 0));
}

/**
 * What a backward tile's caption says (keys as forwardCaption's):
 *   flash.back.say.skipped {}        every score hidden: A and dS are 0, nothing is added
 *   flash.back.say.tile    {}        A recomputed from the saved m and ℓ, dS = A ⊙ (dA − D), the sums grow
 *   flash.back.say.dqDone  {rows}    the last key block of these rows: their dQ is final
 *   flash.back.say.dkvDone {keys}    the last query block for these keys: their dK and dV are final
 */
export function backwardCaption(answer, i) {
  const { tiles } = answer.backward;
  const tile = tiles[i];
  const { rows, cols } = gridOf(tiles);
  const items = [{ key: tile.skipped ? 'flash.back.say.skipped' : 'flash.back.say.tile' }];
  if (tile.col_block === cols - 1) items.push({ key: 'flash.back.say.dqDone', rows: span(tile.rows) });
  if (tile.row_block === rows - 1) items.push({ key: 'flash.back.say.dkvDone', keys: span(tile.cols) });
  return items;
}

/** Largest |a − b| over two equally shaped matrices (null entries, hidden, must match and are skipped). */
export function maxAbsDiff(a, b) {
  let worst = 0;
  a.forEach((row, r) => row.forEach((x, c) => {
    const y = b[r][c];
    if (x !== null && y !== null) worst = Math.max(worst, Math.abs(x - y));
  }));
  return worst;
}

/** A number with `digits` decimals, "−" for minus and never "−0.0000". */
function fixed(value, digits) {
  const text = value.toFixed(digits);
  return Number(text) === 0 ? (0).toFixed(digits) : text.replace('-', '−');
}

/**
 * One way of writing every number of a table or a list, so that a row or a column never mixes two: whole numbers
 * as they are when every value is whole, else four decimals for all (13.99999999 and 13 beside 13.6790 read
 * 14.0000 and 13.0000, not 14.0000 beside 13); hidden values (null) as −∞.
 * @param {Array<number|null|Array<number|null>>} values a matrix or a list
 * @returns {(value: number|null) => string}
 */
export function numberFormat(values) {
  const whole = values.flat().every((value) => value === null || Number.isInteger(value));
  return (value) => {
    if (value === null || value === undefined) return '−∞';
    return whole ? String(value).replace('-', '−') : fixed(value, 4);
  };
}

// The captions whose wording changes with how many rows (or keys) they name.
const COUNTED = new Set([
  'flash.say.grew', 'flash.say.first', 'flash.say.hidden', 'flash.say.done', 'flash.back.say.dqDone', 'flash.back.say.dkvDone',
]);

/**
 * The dictionary key that says `item` (a caption item of forwardCaption or backwardCaption) for as many rows or
 * keys as it names: `<key>.one` for one where the wording changes with the count ("q3 meets its first visible
 * key", "q0 and q1 meet their first …"), else the key itself.
 */
export function captionKey(item) {
  const named = item.rows ?? item.keys ?? [];
  return named.length === 1 && COUNTED.has(item.key) ? `${item.key}.one` : item.key;
}
