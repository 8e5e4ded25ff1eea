// What the head view (views/head-view.js) shows, as numbers: no DOM, no canvas. Given one layer's maps, the
// visible heads, the chosen token and the rows in view, it says which lines to stroke, where, with which
// opacity and width, and what the view reports about them. views/head-view-paint.js strokes a plan on a
// canvas; views/head-view.js owns the elements, the events and the state.
//
// * layerLines() keeps, per head, only the weights of at least CUTOFF (said in the legend), by query row and
//   by key column (CSR indices), so a token's lines are found without scanning the N x N maps;
// * the view of every token's lines may keep only each query token's `limit` strongest lines per head (its
//   lines ranked by weight in sparseHead): the view opens with LIMIT_DEFAULT, so that it is legible;
// * planLines() keeps only the lines that cross the rows in view, grouped by head and by opacity (one stroke
//   per group), and at most MAX_DRAWN of them: when more cross the view (every token's lines at 512 tokens),
//   the strongest, and the plan says from which weight.
//
// Coordinates are CSS px: y from the top of the first row (row i's middle at (i + 0.5) * ROW), x from the
// left of the lanes between the two token columns.

/** Weights below this are not drawn (a line of opacity 0.01 is all but invisible anyway). */
export const CUTOFF = 0.01;
export const ROW = 18; // CSS px per token row
export const LEVELS = 50; // opacities drawn: weight rounded to a multiple of 1 / LEVELS (at least 1 / LEVELS)
// Lines stroked per frame at most. Software canvas strokes of lines across the view cost about 50 µs each
// in headless Chromium on a 2-core machine: 1,500 keep a frame near 75 ms. A query token never has more
// than heads x 100 lines (its row sums to 1, so at most 100 weights reach 0.01); the view of every token
// or of a key taken by many queries may have more, and then the strongest are drawn (said on the view).
export const MAX_DRAWN = 1500;
export const MAX_CANVAS = 16384; // device px: a canvas side Chromium draws without falling back
export const INSET = 3; // px between a line's end and its token column
export const SPREAD = 0.6; // share of a row over which the heads' line ends are spread

// Lines per query token and head in the view of every token's lines: the choices offered, and the one the
// view opens with (Infinity: every line of weight >= CUTOFF).
export const LIMITS = [1, 3, Infinity];
export const LIMIT_DEFAULT = 3;

const STEP = { ArrowUp: -1, ArrowDown: 1, PageUp: -10, PageDown: 10 }; // ui-text: not UI (key names)

/** Every token's lines: the selection when no token is hovered or clicked. */
export const ALL = Object.freeze({ mode: 'all', index: null, limit: Infinity });

/** Every token's lines, at most `limit` of each query token per head (its strongest). */
export const allLines = (limit) => (limit === Infinity ? ALL : Object.freeze({ mode: 'all', index: null, limit }));

/**
 * One head's weights of at least CUTOFF, in query-row order, with row and column indices, and each one's
 * rank in its row (0: the row's strongest; equal weights in key order).
 */
export function sparseHead(map, n) {
  let count = 0;
  for (let i = 0; i < n * n; i += 1) if (map[i] >= CUTOFF) count += 1;
  const query = new Uint16Array(count);
  const key = new Uint16Array(count);
  const weight = new Float32Array(count);
  const rowStart = new Uint32Array(n + 1);
  const keyCount = new Uint32Array(n + 1);
  let e = 0;
  for (let q = 0; q < n; q += 1) {
    rowStart[q] = e;
    const base = q * n;
    for (let k = 0; k < n; k += 1) {
      const w = map[base + k];
      if (w >= CUTOFF) {
        query[e] = q;
        key[e] = k;
        weight[e] = w;
        keyCount[k + 1] += 1;
        e += 1;
      }
    }
  }
  rowStart[n] = e;
  const rank = new Uint16Array(count);
  for (let q = 0; q < n; q += 1) {
    const row = [];
    for (let i = rowStart[q]; i < rowStart[q + 1]; i += 1) row.push(i);
    row.sort((a, b) => weight[b] - weight[a] || a - b);
    row.forEach((i, r) => { rank[i] = r; });
  }
  const keyStart = new Uint32Array(n + 1);
  for (let k = 0; k < n; k += 1) keyStart[k + 1] = keyStart[k] + keyCount[k + 1];
  const byKey = new Uint32Array(count); // entry indices, by key column
  const fill = keyStart.slice(0, n);
  for (let i = 0; i < count; i += 1) {
    byKey[fill[key[i]]] = i;
    fill[key[i]] += 1;
  }
  return { query, key, weight, rank, rowStart, keyStart, byKey, count };
}

/**
 * One layer as the view draws it: n tokens, the head numbers (heads[i] drawn from maps[i], row-major
 * N x N, query by key) and each head's sparse lines.
 */
export function layerLines(maps, heads, n) {
  return { n, heads: [...heads], sparse: maps.map((map) => sparseHead(map, n)) };
}

/** The same token (or both none): {side: 'query'|'key', index} or null. */
export const sameToken = (a, b) => a?.side === b?.side && a?.index === b?.index;

/**
 * The lines shown, {mode, index, limit?}: a hovered token's (all of them), else the clicked one's, else every
 * token's, `limit` (default: every line) of each query token per head.
 */
export function selectionOf(hovered, focused, limit = Infinity) {
  if (hovered) return { mode: hovered.side, index: hovered.index };
  if (focused) return { mode: focused.side, index: focused.index };
  return allLines(limit);
}

/** Calls visit(entry index) for each line of one head's sparse lines `s` in the selection, in entry order. */
export function eachLineOf(s, { mode, index, limit = Infinity }, visit) {
  if (mode === 'all') {
    for (let e = 0; e < s.count; e += 1) if (s.rank[e] < limit) visit(e);
  } else if (mode === 'query') {
    for (let e = s.rowStart[index]; e < s.rowStart[index + 1]; e += 1) visit(e);
  } else {
    for (let i = s.keyStart[index]; i < s.keyStart[index + 1]; i += 1) visit(s.byKey[i]);
  }
}

/** How many lines of weight >= CUTOFF the selection (and its limit) has in the visible heads, in view or not. */
export function countLines(layer, visible, chosen) {
  let count = 0;
  for (let h = 0; h < layer.heads.length; h += 1) {
    if (!visible.has(layer.heads[h])) continue;
    const s = layer.sparse[h];
    if (chosen.mode === 'all' && (chosen.limit ?? Infinity) === Infinity) count += s.count;
    else if (chosen.mode === 'all') {
      for (let q = 0; q < layer.n; q += 1) count += Math.min(chosen.limit, s.rowStart[q + 1] - s.rowStart[q]);
    } else if (chosen.mode === 'query') count += s.rowStart[chosen.index + 1] - s.rowStart[chosen.index];
    else count += s.keyStart[chosen.index + 1] - s.keyStart[chosen.index];
  }
  return count;
}

/**
 * The canvases' size in CSS px, and their device pixel ratio: as tall as the rows, at most the scrolled
 * viewport (viewHeight; 0 when not laid out yet), as wide as the lanes, and no side over MAX_CANVAS device px.
 */
export function canvasSize({ rows, viewHeight, laneWidth, pixelRatio }) {
  const total = rows * ROW;
  const view = viewHeight || total;
  const height = Math.max(1, Math.min(total, view));
  const width = Math.max(1, laneWidth);
  const dpr = Math.min(pixelRatio || 1, MAX_CANVAS / height, MAX_CANVAS / width);
  return { width, height, dpr };
}

export const sameSize = (a, b) => a.width === b.width && a.height === b.height && a.dpr === b.dpr;

/** A weight's opacity level, 1 to LEVELS. */
export const levelOf = (w) => Math.min(LEVELS, Math.max(1, Math.round(w * LEVELS)));

/** A head's lines end a little above or below the row's middle, so that heads on the same pair stay apart. */
export function headShift(h, headCount) {
  return headCount > 1 ? ((h / (headCount - 1)) - 0.5) * SPREAD * ROW : 0;
}

/** What a canvas shows: the lines it stroked (head position, entry), of how many in view, from which weight. */
export const emptyDrawing = () => ({ heads: new Uint8Array(0), entries: new Uint32Array(0), inView: 0, from: CUTOFF });

/**
 * The selection's lines of the visible heads that cross the rows in view (top to top + height), with
 * their opacity level, by head position.
 */
function linesInView(layer, visible, chosen, top, height) {
  const bottom = top + height;
  const picked = [];
  const histogram = new Uint32Array(LEVELS + 1);
  let inView = 0;
  for (let h = 0; h < layer.heads.length; h += 1) {
    const entries = [];
    const levels = [];
    if (visible.has(layer.heads[h])) {
      const s = layer.sparse[h];
      eachLineOf(s, chosen, (e) => {
        const yq = (s.query[e] + 0.5) * ROW;
        const yk = (s.key[e] + 0.5) * ROW;
        if ((yq < top && yk < top) || (yq > bottom && yk > bottom)) return;
        const level = levelOf(s.weight[e]);
        entries.push(e);
        levels.push(level);
        histogram[level] += 1;
      });
    }
    inView += entries.length;
    picked.push({ entries, levels });
  }
  return { picked, histogram, inView };
}

/** A head's entries in order of opacity level (a stable counting sort), and where each level starts. */
function byLevel(entries, levels) {
  const start = new Uint32Array(LEVELS + 2);
  for (const level of levels) start[level + 1] += 1;
  for (let l = 1; l <= LEVELS + 1; l += 1) start[l] += start[l - 1];
  const order = new Uint32Array(entries.length);
  const fill = start.slice();
  for (let i = 0; i < entries.length; i += 1) {
    order[fill[levels[i]]] = entries[i];
    fill[levels[i]] += 1;
  }
  return { order, start };
}

/**
 * What to stroke for a selection: the lines that cross the rows in view, all of them, or when there are
 * more than MAX_DRAWN, the strongest (every line of the highest opacity levels that fit in MAX_DRAWN).
 * @param {{layer: ReturnType<typeof layerLines>, visible: Set<number>, chosen: {mode: string, index: number|null},
 *   top: number, height: number, width: number}} input top: the first row in view, in CSS px
 * @returns {{lineWidth: number, x0: number, x1: number,
 *   groups: {head: number, alpha: number, ends: Float64Array}[], drawing: ReturnType<typeof emptyDrawing>}}
 *   one group per head position and opacity, in stroke order; ends holds (y at the query, y at the key) pairs
 */
export function planLines({ layer, visible, chosen, top, height, width }) {
  const { picked, histogram, inView } = linesInView(layer, visible, chosen, top, height);
  let lowest = 1; // the lowest opacity level drawn
  let kept = inView;
  while (kept > MAX_DRAWN && lowest <= LEVELS) {
    kept -= histogram[lowest];
    lowest += 1;
  }

  const groups = [];
  const drawnHeads = new Uint8Array(kept);
  const drawnEntries = new Uint32Array(kept);
  let d = 0;
  for (let h = 0; h < layer.heads.length; h += 1) {
    const { entries, levels } = picked[h];
    if (!entries.length) continue;
    const { order, start } = byLevel(entries, levels);
    const s = layer.sparse[h];
    const shift = headShift(h, layer.heads.length);
    for (let level = lowest; level <= LEVELS; level += 1) {
      if (start[level] === start[level + 1]) continue;
      const ends = new Float64Array(2 * (start[level + 1] - start[level]));
      let j = 0;
      for (let i = start[level]; i < start[level + 1]; i += 1) {
        const e = order[i];
        ends[j] = (s.query[e] + 0.5) * ROW + shift;
        ends[j + 1] = (s.key[e] + 0.5) * ROW + shift;
        j += 2;
        drawnHeads[d] = h;
        drawnEntries[d] = e;
        d += 1;
      }
      groups.push({ head: h, alpha: level / LEVELS, ends });
    }
  }
  return {
    lineWidth: chosen.mode === 'all' ? 1 : 1.5,
    x0: INSET,
    x1: width - INSET,
    groups,
    drawing: { heads: drawnHeads, entries: drawnEntries, inView, from: lowest > 1 ? (lowest - 0.5) / LEVELS : CUTOFF },
  };
}

/** A drawing's lines as {head, query, key, weight} typed arrays (head numbers, token indices, weights). */
export function linesOf(layer, { heads: positions, entries }) {
  const count = entries.length;
  const out = {
    head: new Uint16Array(count), query: new Uint16Array(count), key: new Uint16Array(count),
    weight: new Float32Array(count),
  };
  for (let i = 0; i < count; i += 1) {
    const s = layer.sparse[positions[i]];
    const e = entries[i];
    out.head[i] = layer.heads[positions[i]];
    out.query[i] = s.query[e];
    out.key[i] = s.key[e];
    out.weight[i] = s.weight[e];
  }
  return out;
}

/**
 * What the container says of the state (its data-* attributes), and whether the budget cut the lines in view.
 * @returns {{mode: string, token: string, heads: string, lines: string, drawn: string, from: string, cut: boolean}}
 */
export function describeState(chosen, visible, count, drawing) {
  return {
    mode: chosen.mode,
    token: chosen.index === null ? '' : String(chosen.index),
    heads: [...visible].sort((a, b) => a - b).join(','),
    lines: String(count),
    drawn: String(drawing.entries.length),
    from: String(drawing.from),
    cut: drawing.entries.length < drawing.inView,
  };
}

/**
 * Where a key press on token `index` of a column of n moves the keyboard: {column: 'same'|'query'|'key', index},
 * the index kept in 0..n-1; null for a key that does not move it.
 */
export function keyMove(key, index, n) {
  let next = null;
  if (Object.hasOwn(STEP, key)) next = { column: 'same', index: index + STEP[key] };
  else if (key === 'Home') next = { column: 'same', index: 0 }; // ui-text: not UI (a key name)
  else if (key === 'End') next = { column: 'same', index: n - 1 }; // ui-text: not UI (a key name)
  else if (key === 'ArrowLeft') next = { column: 'query', index };
  else if (key === 'ArrowRight') next = { column: 'key', index };
  if (!next) return null;
  return { column: next.column, index: Math.max(0, Math.min(n - 1, next.index)) };
}

/** The scroll position that brings row `index` into a view of `viewHeight` px at `scrollTop`; null if it is in view. */
export function scrollFor(index, scrollTop, viewHeight) {
  const y = index * ROW;
  if (y < scrollTop || y + ROW > scrollTop + viewHeight) return Math.max(0, y - viewHeight / 2);
  return null;
}
