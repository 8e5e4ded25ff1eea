// What each step of multi-head attention shows: a trace (from /api/v1/trace or
// /api/v1/toy) -> a grid of labelled Plotly figures and operators for one step.
// Pure: no DOM, no fetch (the words come from the page's dictionary through t()).
// views/step-stage.js lays the result out and draws it.
//
// Long inputs are shown through a window: the token axes of every matrix hold at most
// windowSize(width) tokens (32 on a wide screen), the query rows around the chosen query and
// the keys around it too, or from wherever the user moved the key window. Labels stay readable
// and figures fit the screen at 512 tokens; each step also names its whole matrix (`overview`),
// which the page shows small with the window outlined.
import { t } from '../i18n/index.js';
import { MARKED, labelMargin, tokenLabel } from './axes.js';
import { barsFigure } from './bars.js';
import { escapeForPlotly } from './escape.js';
import { isGrouped, kvGroup } from './kv-groups.js';
import { formatCell, matrixFigure, NUMBERS_MAX, signedRange, valueMax } from './matrix.js';
import { isFullAttention, probsparseVariant } from './probsparse.js';

/** The steps of multi-head attention, in order (model/steps.py STEPS). */
export const STEPS = Object.freeze([
  'input', 'project', 'split', 'scores', 'scale', 'mask', 'softmax', 'weighted_sum', 'concat', 'output',
]);

// ---- the two sources, as one trace-like object ---------------------------------

/**
 * @typedef {object} StepData
 * @property {'trace'|'toy'} source
 * @property {string[]} queryLabels raw text of each query row (tokens, or "q0", "q1", …)
 * @property {string[]} keyLabels raw text of each key row
 * @property {string|null} queryName what a query is called on hover ("query"; null: the label says it)
 * @property {string|null} keyName what a key is called on hover
 * @property {string|null} tokenName what a row of X, Q, K, V is called on hover
 * @property {number} dModel
 * @property {number} nHeads
 * @property {number} dHead the width of each head's q and k (d_keys)
 * @property {number} dValues the width of each head's v and of its slot in the concat (d_values)
 * @property {number} scale
 * @property {number[]} heads the heads the per-head steps hold, in their order
 * @property {boolean} causal
 * @property {number|null} layer
 * @property {object} steps the API's steps
 * @property {string} variant how scores are computed and weights chosen (the toy's variants; a model: scaled_dot)
 * @property {number} temperature τ, which divides the scaled scores (1: none)
 * @property {boolean} straightThrough gumbel only: one-hot forward
 * @property {number} seed the draws' seed (sample, gumbel)
 * @property {string} positions none, sinusoidal (added to the inputs), rope (q and k rotated), alibi (a bias)
 * @property {{w_q: number[][][], w_k: number[][][], v: number[][]}|null} additive Bahdanau's parameters per head
 * @property {number|null} [nKvHeads] a model's key-value heads (grouped-query attention when fewer than nHeads)
 * @property {number|null} [window] the layer's sliding window: query i sees keys i − window + 1 … i (null: none)
 * @property {{q: number[][][], k: number[][][]}|null} [rotated] a RoPE model's q and k after the rotation
 *   (steps.split holds them before it); the scores are made of these
 * @property {{theta: number, scaling: object|null, frequencies: number[]}|null} [rope] a RoPE model's settings
 */

/**
 * A /api/v1/trace response -> StepData (tokens labelled by their readable form, ⟨UNK⟩ marked).
 * `nKvHeads`: the model's key-value heads (GET /api/v1/models n_kv_heads), for grouped-query attention;
 * `window`: the traced layer's sliding window (GET /api/v1/models window and window_layers), null for none.
 */
export function fromTrace(trace, { nKvHeads = null, window = null } = {}) {
  const labels = trace.tokens.map((token) => tokenLabel(token));
  return {
    source: 'trace',
    queryLabels: labels,
    keyLabels: labels,
    queryName: t('figure.query'),
    keyName: t('figure.key'),
    tokenName: t('walk.word.token'),
    dModel: trace.d_model,
    nHeads: trace.n_heads,
    dHead: trace.d_head,
    dValues: trace.d_head,
    scale: trace.scale,
    softcap: trace.softcap ?? null, // Gemma 2: the scale step's scores are soft-capped at ±softcap
    heads: trace.heads,
    causal: false,
    layer: trace.layer,
    steps: trace.steps,
    variant: 'scaled_dot',
    temperature: 1,
    straightThrough: false,
    seed: 0,
    // learned positions enter before the layer, not in these steps; RoPE turns q and k in the split step
    positions: trace.rotated ? 'rope' : 'none',
    additive: null,
    nKvHeads: nKvHeads ?? trace.n_heads,
    window, // the layer's sliding window (keys a query sees, itself included); null: none
    rotated: trace.rotated ?? null,
    rope: trace.rope ?? null,
  };
}

/** A /api/v1/toy response -> StepData (every head; queries "q0…", keys "k0…"). */
export function fromToy(toy, { causal = false } = {}) {
  const { q, k } = toy.steps.input;
  return {
    source: 'toy',
    queryLabels: q.map((_, i) => `q${i}`),
    keyLabels: k.map((_, j) => `k${j}`),
    queryName: null,
    keyName: null,
    tokenName: null,
    dModel: toy.d_model,
    nHeads: toy.n_heads,
    dHead: toy.d_head,
    dValues: toy.d_values ?? toy.d_head,
    scale: toy.scale,
    heads: Array.from({ length: toy.n_heads }, (_, h) => h),
    causal,
    layer: null,
    steps: toy.steps,
    soft: toy.soft ?? null, // hard, sample, gumbel: the softmax the one-hot weights came from, [h][L][S]
    biased: Boolean(toy.biases), // the Iris layer's trace carries its biases; the toy's are zero
    variant: toy.variant ?? 'scaled_dot',
    temperature: toy.temperature ?? 1,
    straightThrough: Boolean(toy.straight_through),
    seed: toy.seed ?? 0,
    positions: toy.positions ?? 'none',
    additive: toy.additive ?? null,
    factor: toy.factor ?? null, // probsparse: the sampling factor c
    probsparse: toy.probsparse ?? null, // probsparse: {sampled_keys, measure, active, output_difference}
    tau: toy.tau ?? 1, // the de-stationary factors: the scores step holds scores · τ + δ
    delta: toy.delta ?? null, // [S], one per key
  };
}

// ---- small matrix helpers -----------------------------------------------------

export function transpose(matrix) {
  return matrix.length ? matrix[0].map((_, j) => matrix.map((row) => row[j])) : [];
}

/** q ∘ k_j for every key row j: the products the dot product adds up. */
export function elementwiseRows(vector, matrix) {
  return matrix.map((row) => row.map((x, d) => x * vector[d]));
}

export function rowSums(matrix) {
  return matrix.map((row) => row.reduce((sum, x) => sum + x, 0));
}

/** a_j · v_j for every row j. */
export function weightedRows(weights, matrix) {
  return matrix.map((row, j) => row.map((x) => x * weights[j]));
}

const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));

const hiddenCache = new WeakMap(); // a trace's matrix -> whether it holds a hidden entry

/** Whether a matrix holds a hidden (null) entry; remembered for the trace's own matrices. */
function hasHidden(matrix) {
  let hidden = hiddenCache.get(matrix);
  if (hidden === undefined) {
    hidden = matrix.some((row) => row.some((v) => v === null));
    hiddenCache.set(matrix, hidden);
  }
  return hidden;
}

/** M = masked − scaled: 0 where nothing was added, ALiBi's bias where it was, null (−∞) where hidden. */
export function addedMask(scaled, masked) {
  return masked.map((row, i) => row.map((v, j) => (v === null ? null : v - scaled[i][j])));
}

/** Whether every row of a masked-scores matrix keeps at least one key (a row with none gets zero weights). */
export function everyRowSeesAKey(masked) {
  return masked.every((row) => row.some((v) => v !== null));
}

/** x (1 × n) · W (n × m) -> 1 × m. */
function rowTimes(x, W) {
  return W[0].map((_, a) => x.reduce((sum, xd, d) => sum + xd * W[d][a], 0));
}

/**
 * Bahdanau's (additive) scores of one query, worked out with the scorer's own parameters W, U, v
 * (the answer's additive.w_q, w_k, v; not the projections W_q, W_k): a = q·W (the query's part, 1 × A),
 * B = K·U (each key's part, S × A), H = tanh(a + B_j) (one hidden vector per key, S × A) and
 * s_j = H_j·v (the query's row of scores, S).
 * @param {number[]} q the query (d_keys)
 * @param {number[][]} K the keys (S × d_keys)
 * @param {number[][]} wq W (d_keys × A)
 * @param {number[][]} wk U (d_keys × A)
 * @param {number[]} v (A)
 */
export function additiveRow(q, K, wq, wk, v) {
  const a = rowTimes(q, wq);
  const B = K.map((k) => rowTimes(k, wk));
  const H = B.map((b) => b.map((x, i) => Math.tanh(a[i] + x)));
  const s = H.map((h) => h.reduce((sum, x, i) => sum + x * v[i], 0));
  return { a, B, H, s };
}

/** Linear attention's feature map φ(x) = elu(x) + 1: x + 1 above 0, eˣ below (always positive). */
export function feature(x) {
  return x > 0 ? x + 1 : Math.exp(x);
}

/** The split step's q and k through φ (v as it is): what linear attention's scores are made of. */
function featureSplit(split) {
  const phi = (stack) => stack.map((m) => m.map((row) => row.map(feature)));
  return { q: phi(split.q), k: phi(split.k), v: split.v };
}

/** The q, k and v the scores are made of: after RoPE's rotation for a model with RoPE, else the split's. */
export function scoredSplit(T) {
  return T.rotated ? { ...T.steps.split, q: T.rotated.q, k: T.rotated.k } : T.steps.split;
}

/** Whether each query keeps exactly one key (weights 0 or 1): hard, sample and straight-through gumbel. */
export function isOneHot(T) {
  return T.variant === 'hard' || T.variant === 'sample' || (T.variant === 'gumbel' && T.straightThrough);
}

/**
 * Which telling of `step` is true for this data: null for the plain one (scaled dot product, softmax),
 * or the name of its variant in the dictionaries (step.<step>.<variant>.title and .body).
 */
export function stepVariant(T, step) {
  if (T.variant === 'probsparse' && T.probsparse) {
    const told = probsparseVariant(T, step);
    if (told || ['scores', 'softmax', 'weighted_sum', 'output'].includes(step)) return told;
  }
  const unscaled = T.variant === 'dot' || T.variant === 'additive' || T.variant === 'general'; // no 1/√d_keys
  const grouped = isGrouped(T.nHeads, T.nKvHeads);
  switch (step) {
    case 'input': return T.positions === 'sinusoidal' ? 'sinusoidal' : null;
    case 'split':
      if (T.rotated) return grouped ? 'ropeGrouped' : 'ropeModel';
      if (grouped) return 'grouped';
      return T.positions === 'rope' ? 'rope' : null;
    case 'scores': return ['additive', 'linear', 'general', 'cosine'].includes(T.variant) ? T.variant : null;
    case 'scale':
      if (T.softcap) return 'softcap';
      if (T.source === 'trace' && Math.abs(T.scale - 1 / Math.sqrt(T.dHead)) > 1e-9 * T.scale) return 'own';
      if (T.variant === 'linear') return 'linear'; // rows are divided by their sums: no factor changes a weight
      if (T.variant === 'cosine') return 'cosine'; // cosines in [−1, 1] times the scale (divided by τ)
      if (unscaled) return T.temperature === 1 ? T.variant : 'unscaledTemperature';
      return T.temperature === 1 ? null : 'temperature';
    case 'mask': return T.positions === 'alibi' ? 'alibi' : null;
    case 'softmax':
      if (T.variant === 'gumbel') return T.straightThrough ? 'gumbelST' : 'gumbel';
      return ['hard', 'sample', 'linear'].includes(T.variant) ? T.variant : null;
    case 'weighted_sum': return isOneHot(T) ? 'oneHot' : null;
    default: return null;
  }
}

// ---- windows ----------------------------------------------------------------------
// (The L × S maps' captions do not repeat the windows: the navigator above them says them.)

/**
 * How many tokens a token axis shows at once, from the stage's width: three 32-token matrices
 * side by side keep 12 px cells (one readable label per token) on a 1400 px screen, and 24 tokens
 * fit the 700 px stage of an 800 px screen (a sentence of two dozen tokens needs no window there).
 */
export function windowSize(width) {
  return width >= 1100 ? 32 : width >= 640 ? 24 : 16;
}

/**
 * The window of at most `size` of the indices 0…n−1 that starts at `start`, or (start null)
 * holds `centre` in its middle; moved inside 0…n−1 when it would stick out.
 * @returns {{start: number, end: number, n: number, windowed: boolean}} end exclusive
 */
export function tokenWindow(n, size, centre, start = null) {
  if (n <= size) return { start: 0, end: n, n, windowed: false };
  const first = clamp(start === null ? centre - Math.floor(size / 2) : start, 0, n - size);
  return { start: first, end: first + size, n, windowed: true };
}

/**
 * The windows a selection shows: query rows around the query; keys from `keys` (the first key
 * of a window the user moved) or, when null, around the query as well.
 * @returns {{size: number, rows: ReturnType<typeof tokenWindow>, keys: ReturnType<typeof tokenWindow>}}
 */
export function windowsOf(T, { query, keys = null, width = 1200 }) {
  const size = windowSize(width);
  const q = clamp(query, 0, T.queryLabels.length - 1);
  return {
    size,
    rows: tokenWindow(T.queryLabels.length, size, q),
    keys: tokenWindow(T.keyLabels.length, size, Math.min(q, T.keyLabels.length - 1), keys),
  };
}

/** The first key of the key window moved by `direction` halves of a window (−1 earlier, 1 later). */
export function movedKeys({ size, keys }, direction) {
  const half = Math.max(1, Math.floor(size / 2));
  return clamp(keys.start + direction * half, 0, Math.max(0, keys.n - size));
}

// ---- layout pieces --------------------------------------------------------------

const plot = (area, key, caption, figure) => ({ type: 'plot', area, key, caption, figure });
// Below this stage width (a phone) the softmax step and the query/key view stack their panels, each at the
// full width: side by side they were slivers (51 px each for q and K_h at 390 px).
const STACKED_PX = 600;
const op = (area, text, id = null, small = false) => ({ type: 'op', area, text, id, small });

/** Pixel sizes of one row for each kind of matrix, from the number of tokens drawn. */
function sizes(T, n) {
  const small = T.dModel <= NUMBERS_MAX && n <= NUMBERS_MAX;
  return {
    small,
    wide: small ? 34 : clamp(Math.round(420 / n), 8, 18), // N × d_model
    thin: small ? 26 : clamp(Math.round(80 / n), 2, 5), // N × d_model, as a small overview
    head: small ? 38 : clamp(Math.round(420 / n), 8, 22), // N × d_head
    square: small ? 50 : clamp(Math.round(480 / n), 8, 34), // N × N
    dims: small ? 38 : 8, // d_head rows (K_hᵀ)
  };
}

/**
 * Whether numbers fit in the cells of a panel that gets about `fraction` of the stage's width:
 * at most 16 columns, each at least `minCell` pixels wide after the margins.
 */
function numbersFit(c, fraction, cols, minCell = 30) {
  return cols <= NUMBERS_MAX && fitCell(c, fraction, cols) >= minCell;
}

/** The widest square cell a panel of about `fraction` of the stage's width has room for. */
function fitCell(c, fraction, cols) {
  return Math.floor((c.width * fraction - c.sideMargins) / cols);
}

// The numbers matrix.js writes in cells: a 9–13 px font from the row's height (cellPx / 3.4). Their width
// in em of a sans-serif UI font (DejaVu Sans's, the widest of the usual ones): digits 0.64, "−" and "∞"
// 0.84, "." 0.32.
const cellFont = (rowPx) => Math.max(9, Math.min(13, Math.round(rowPx / 3.4)));
const CHAR_EM = { '−': 0.84, '∞': 0.84, '.': 0.32 };
const CELL_PADDING = 4; // px left free around a cell's number

/** Whether every value of `z`, written as matrix.js writes it in rows `rowPx` tall, fits a column `colPx` wide. */
function numbersFitColumns(z, rowPx, colPx) {
  if (!z.length || z[0].length > NUMBERS_MAX || z.length > NUMBERS_MAX) return false;
  const font = cellFont(rowPx);
  let widest = 0;
  for (const row of z) {
    for (const v of row) {
      let em = 0;
      for (const char of formatCell(v)) em += CHAR_EM[char] ?? 0.64;
      widest = Math.max(widest, em * font);
    }
  }
  return widest + CELL_PADDING <= colPx;
}

/** What the step functions need: the head's slot and columns, the query, the windows and their slices. */
function context(T, selection) {
  const { head, width = 1200 } = selection;
  const slot = Math.max(0, T.heads.indexOf(head));
  const h = T.heads[slot];
  const c0 = h * T.dHead;
  const { kv } = kvGroup(h, T.nHeads, T.nKvHeads); // K and V: the key-value head serving h (h itself without groups)
  const { size, rows, keys } = windowsOf(T, selection);
  const q = clamp(selection.query, 0, T.queryLabels.length - 1);
  const qLabels = T.queryLabels.slice(rows.start, rows.end);
  const kLabels = T.keyLabels.slice(keys.start, keys.end);
  return {
    width,
    sideMargins: labelMargin(qLabels) + 80, // row labels, colour bar, gaps
    slot,
    head: h,
    c0,
    c1: c0 + T.dHead - 1,
    v0: h * T.dValues, // head h's columns of V and of the concat
    v1: (h + 1) * T.dValues - 1,
    kv,
    grouped: isGrouped(T.nHeads, T.nKvHeads),
    k0: kv * T.dHead, // head h's columns of K: its key-value head's
    kv0: kv * T.dValues, // and of V
    q,
    qLabel: T.queryLabels[q],
    L: T.queryLabels.length,
    S: T.keyLabels.length,
    size: sizes(T, Math.max(qLabels.length, kLabels.length)),
    windowSize: size,
    rows,
    keys,
    windowed: rows.windowed || keys.windowed,
    nq: qLabels.length,
    nk: kLabels.length,
    rowQ: { row0: q, row1: q },
    slotCols: { col0: c0, col1: c0 + T.dHead - 1 },
    valueCols: { col0: h * T.dValues, col1: (h + 1) * T.dValues - 1 },
    keyCols: { col0: kv * T.dHead, col1: (kv + 1) * T.dHead - 1 },
    kvValueCols: { col0: kv * T.dValues, col1: (kv + 1) * T.dValues - 1 },
    /** The query rows in the window. */
    Q: (matrix) => matrix.slice(rows.start, rows.end),
    /** The key rows in the window. */
    K: (matrix) => matrix.slice(keys.start, keys.end),
    /** Query rows × key columns in the windows. */
    QK: (matrix) => matrix.slice(rows.start, rows.end).map((row) => row.slice(keys.start, keys.end)),
    qRows: { rowLabels: qLabels, rowOffset: rows.start },
    kRows: { rowLabels: kLabels, rowOffset: keys.start },
    kCols: { colLabels: kLabels, colOffset: keys.start },
  };
}

const shape = (rows, cols) => `${rows}×${cols}`;
const DATA_MARK = '\u0000';

/**
 * A caption that quotes a token: the dictionary's text with `values.label` as a separate part
 * {data: label}, which the view marks as data (translate="no"), not UI text; `suffix` follows.
 * @returns {Array<string|{data: string}>}
 */
function labelled(key, values, suffix = '') {
  const [before, after = ''] = t(key, { ...values, label: DATA_MARK }).split(DATA_MARK);
  return [before, { data: String(values.label) }, after + suffix].filter((part) => part !== '');
}
const span = (w) => ({ from: w.start, to: w.end - 1 });

/** " · rows 240–271" when the query (or key) rows are a window of the matrix. */
function rowsShown(w) {
  return w.windowed ? ` · ${t('walk.cap.rows', span(w))}` : '';
}

/** " · keys 240–271" when the key columns are a window of the matrix. */
function keysShown(w) {
  return w.windowed ? ` · ${t('walk.cap.keys', span(w))}` : '';
}

/** What the overview shows for a step: the whole of its main matrix, the windows outlined. */
function overview(c, z, { kind = 'signed', range = null, keys = false } = {}) {
  return c.windowed ? { z, kind, range, rows: c.rows, cols: keys ? c.keys : null, query: c.q } : null;
}

// ---- one function per step --------------------------------------------------------

function inputStep(T, c) {
  if (T.source === 'trace') {
    const X = T.steps.input;
    return {
      columns: 'minmax(0, 1fr)',
      areas: ['x'],
      overview: overview(c, X),
      items: [
        plot('x', 'input', t('walk.cap.inputX', { shape: shape(c.L, T.dModel), n: c.L, d: T.dModel, layer: T.layer }) + rowsShown(c.rows),
          matrixFigure({
            z: c.Q(X), ...c.qRows, rowName: T.tokenName, cellPx: Math.max(c.size.wide, 8), highlights: [c.rowQ],
            range: signedRange(X),
          })),
      ],
    };
  }
  const { q, k, v } = T.steps.input;
  const plus = T.positions === 'sinusoidal' ? ` + ${t('walk.cap.inputPositions')}` : ''; // the table is in these numbers
  const beside = numbersFit(c, 1 / 3, T.dModel); // else stacked, so that every cell keeps room for its number
  return {
    ...(beside ? { columns: 'repeat(3, minmax(0, 1fr))', areas: ['q k v'] } : { columns: 'minmax(0, 1fr)', areas: ['q', 'k', 'v'] }),
    overview: overview(c, q),
    items: [
      plot('q', 'input-q', t('walk.cap.inputQ', { shape: shape(c.L, T.dModel), plus }) + rowsShown(c.rows),
        matrixFigure({ z: c.Q(q), ...c.qRows, rowName: null, cellPx: c.size.wide, highlights: [c.rowQ], range: signedRange(q) })),
      plot('k', 'input-k', t('walk.cap.inputK', { shape: shape(c.S, T.dModel), plus }) + rowsShown(c.keys),
        matrixFigure({ z: c.K(k), ...c.kRows, rowName: null, cellPx: c.size.wide, range: signedRange(k) })),
      plot('v', 'input-v', t('walk.cap.inputV', { shape: shape(c.S, T.dModel), plus }) + rowsShown(c.keys),
        matrixFigure({ z: c.K(v), ...c.kRows, rowName: null, cellPx: c.size.wide, range: signedRange(v) })),
    ],
  };
}

function projectStep(T, c) {
  const P = T.steps.project;
  const toy = T.source === 'toy';
  const bias = (m) => (toy && !T.biased ? '' : ` + b_${m}`);
  const formula = {
    q: `Q = ${toy ? 'X_q' : 'X'}·W_q${bias('q')}`,
    k: `K = ${toy ? 'X_k' : 'X'}·W_k${bias('k')}`,
    v: `V = ${toy ? 'X_v' : 'X'}·W_v${bias('v')}`,
  };
  const beside = (c.size.small && numbersFit(c, 1 / 3, T.dModel)) || (c.windowed && c.width >= 1000);
  const items = ['q', 'k', 'v'].map((m) => {
    const [win, rows, n] = m === 'q' ? [c.rows, c.qRows, c.L] : [c.keys, c.kRows, c.S];
    const z = m === 'q' ? c.Q(P[m]) : c.K(P[m]);
    const { col0: c0, col1: c1 } = headColumns(c, m);
    const width = m === 'v' ? T.dValues : T.dHead;
    const values = { formula: formula[m], shape: shape(n, P[m][0].length), head: c.head, kv: c.kv, c0, c1 };
    // grouped-query attention: K and V have a slice per key-value head, which head h shares with its group
    const caption = t(c.grouped && m !== 'q' ? 'walk.cap.projectShared' : 'walk.cap.project', values);
    return plot(m, `project-${m}`, caption + rowsShown(win),
      matrixFigure({
        z, ...rows, rowName: T.tokenName, cellPx: beside && !c.size.small ? 13 : c.size.wide,
        highlights: [headColumns(c, m)], slots: width, range: signedRange(P[m]),
      }));
  });
  return {
    overview: overview(c, P.q),
    ...(beside
      ? { columns: 'repeat(3, minmax(0, 1fr))', areas: ['q k v'], items }
      : { columns: 'minmax(0, 1fr)', areas: ['q', 'k', 'v'], items }),
  };
}

/** The columns of Q, K or V (m) that head c.head works with: its own of Q, its key-value head's of K and V. */
function headColumns(c, m) {
  return m === 'q' ? c.slotCols : m === 'k' ? c.keyCols : c.kvValueCols;
}

/** The angle p·f_i (radians) by which RoPE turns pair i of a row at position p; f_i the model's frequencies. */
export function ropeAngles(frequencies, position) {
  return frequencies.map((f) => position * f);
}

/** How a RoPE model's frequencies are scaled, in words (empty: they are not); for captions and the step's text. */
export function ropeScalingText(rope) {
  const scaling = rope && rope.scaling;
  if (!scaling) return '';
  if (scaling.kind === 'linear') return t('walk.rope.linear', { factor: scaling.factor });
  const original = scaling.original_max_positions;
  return t('walk.rope.llama3', {
    factor: scaling.factor,
    long: +(original / scaling.low_freq_factor).toPrecision(6),
    short: +(original / scaling.high_freq_factor).toPrecision(6),
  });
}

/**
 * What the split step's text says of a model's heads: the key-value head serving `head` and the other query
 * heads it serves (grouped-query attention), and RoPE's base, scaling and half width.
 */
export function splitFacts(T, head) {
  const { kv, others } = kvGroup(head, T.nHeads, T.nKvHeads ?? T.nHeads);
  return {
    nKvHeads: T.nKvHeads ?? T.nHeads,
    kv,
    others: others.join(', '),
    theta: T.rope ? T.rope.theta : '',
    scaling: ropeScalingText(T.rope) ? ` (${ropeScalingText(T.rope)})` : '',
    half: T.dHead / 2,
  };
}

/**
 * The pairs whose angles a caption lists, in order: the first two and the last of `n`, with null where pairs
 * between two listed ones are left out (written as an ellipsis).
 */
export function listedPairs(n) {
  const pairs = [...new Set([0, 1, n - 1])].filter((i) => i >= 0 && i < n);
  return pairs.flatMap((i, k) => (k > 0 && i > pairs[k - 1] + 1 ? [null, i] : [i]));
}

/** "i = 0: 5 · i = 1: 0.50 · … · i = 5: 0.01": the listed pairs' angles, written as the angles' chart writes them. */
export function ropeAngleList(angles) {
  return listedPairs(angles.length)
    .map((i) => (i === null ? '…' : t('walk.cap.ropePair', { i, angle: formatCell(angles[i]) })))
    .join(' · ');
}

function splitStep(T, c) {
  if (T.rotated && T.rope) return ropeSplitStep(T, c);
  const P = T.steps.project;
  const split = T.steps.split;
  const items = [];
  // Below STACKED_PX one column (Q's panels, then K's, then V's): three side by side at 390 px left 100 px per
  // panel, and the column numbers and the "↓ columns" lines ran into one another. The column numbers are
  // chosen for each panel's width (every k-th where they do not fit), never Plotly's own choice.
  const narrow = c.width < STACKED_PX;
  const panel = narrow ? c.width - 20 : c.width / 3 - 24; // about the width of one panel
  const colPx = (z, labels) => Math.max(0.1, (panel - (labels ? labelMargin(labels) : 0) - 12) / z[0].length);
  for (const m of ['q', 'k', 'v']) {
    const [win, rows, n, cut] = m === 'q' ? [c.rows, c.qRows, c.L, c.Q] : [c.keys, c.kRows, c.S, c.K];
    const range = signedRange(P[m]);
    const big = m.toUpperCase();
    const cols = headColumns(c, m);
    const { col0: c0, col1: c1 } = cols;
    const width = m === 'v' ? T.dValues : T.dHead;
    const slice = `${big}[:, ${c0}:${c1 + 1}]`;
    const rotated = T.positions === 'rope' && m !== 'v'; // RoPE turns each query and key by its position
    const slices = m === 'q' ? T.nHeads : T.nKvHeads ?? T.nHeads;
    items.push(
      plot(`${m}f`, `split-${m}-full`, t('walk.cap.splitFull', { m: big, shape: shape(n, P[m][0].length), nHeads: slices, dHead: width }) + rowsShown(win),
        matrixFigure({
          z: cut(P[m]), ...rows, rowName: T.tokenName, cellPx: c.size.thin, highlights: [cols], slots: width,
          colorbar: false, showRowLabels: c.size.small, range,
          colPx: colPx(P[m], c.size.small ? rows.rowLabels : null),
        })),
      op(`${m}a`, t(rotated ? 'walk.op.columnsRotated' : 'walk.op.columns', { c0, c1 }), null, true),
      plot(`${m}s`, `split-${m}`, `${big}_h = ${rotated ? `RoPE(${slice})` : slice} · ${t('walk.word.head', { head: c.head })} · ${shape(n, width)}${rowsShown(win)}`,
        matrixFigure({
          z: cut(split[m][c.slot]), ...rows, rowName: T.tokenName, colOffset: c0, cellPx: c.size.head, range,
          highlights: m === 'q' ? [c.rowQ] : [], colorbar: false, colPx: colPx(split[m][c.slot], rows.rowLabels),
        })),
    );
  }
  const layout = narrow
    ? { columns: 'minmax(0, 1fr)', areas: ['qf', 'qa', 'qs', 'kf', 'ka', 'ks', 'vf', 'va', 'vs'] } // ui-text: not UI (CSS grid templates)
    : { columns: 'repeat(3, minmax(0, 1fr))', areas: ['qf kf vf', 'qa ka va', 'qs ks vs'] }; // ui-text: not UI (CSS grid templates)
  return {
    ...layout,
    overview: overview(c, split.q[c.slot], { range: signedRange(P.q) }),
    items,
  };
}

/**
 * The split step of a model with RoPE: each of Q, K, V cut into heads (K and V into key-value heads), then
 * head h's q and k before and after the rotation, and the angles p·θ_i that turn the chosen query's row.
 */
function ropeSplitStep(T, c) {
  const P = T.steps.project;
  const split = T.steps.split;
  const items = [];
  const narrow = c.width < 600; // one column: q's panels, then k's, then v's and the angles
  const panel = narrow ? c.width - 20 : c.width / 3 - 24; // about the width of one panel
  // numbers only where every value fits its column (d_head 12 at 800 px leaves too little room)
  const fits = (z, labels) => numbersFitColumns(z, c.size.head, (panel - labelMargin(labels) - 12) / z[0].length);
  for (const m of ['q', 'k', 'v']) {
    const [win, rows, n, cut] = m === 'q' ? [c.rows, c.qRows, c.L, c.Q] : [c.keys, c.kRows, c.S, c.K];
    const big = m.toUpperCase();
    const cols = headColumns(c, m);
    const { col0: c0, col1: c1 } = cols;
    const width = m === 'v' ? T.dValues : T.dHead;
    const slices = m === 'q' ? T.nHeads : T.nKvHeads;
    const slice = `${big}[:, ${c0}:${c1 + 1}]`;
    const turned = m === 'v' ? null : T.rotated[m][c.slot];
    const range = turned ? signedRange(P[m], turned) : signedRange(P[m]); // one scale before and after
    const head = t('walk.word.head', { head: c.head });
    const sliced = m === 'v'
      ? `V_h = ${slice} · ${head} · ${shape(n, width)}`
      : t('walk.cap.ropeBefore', { slice, head: c.head, shape: shape(n, width) });
    items.push(
      plot(`${m}f`, `split-${m}-full`, t('walk.cap.splitFull', { m: big, shape: shape(n, P[m][0].length), nHeads: slices, dHead: width }) + rowsShown(win),
        matrixFigure({
          z: cut(P[m]), ...rows, rowName: T.tokenName, cellPx: c.size.thin, highlights: [cols], slots: width,
          colorbar: false, showRowLabels: c.size.small, range,
        })),
      op(`${m}a`, t('walk.op.columns', { c0, c1 }), null, true),
      plot(`${m}s`, `split-${m}`, sliced + rowsShown(win),
        matrixFigure({
          z: cut(split[m][c.slot]), ...rows, rowName: T.tokenName, colOffset: c0, cellPx: c.size.head, range,
          highlights: m === 'q' ? [c.rowQ] : [], colorbar: false, numbers: fits(cut(split[m][c.slot]), rows.rowLabels),
        })),
    );
    if (turned) {
      items.push(
        op(`${m}r`, t('walk.op.rope'), null, true),
        plot(`${m}t`, `split-${m}-rotated`, `${big}_h = RoPE(${slice}) · ${head} · ${shape(n, width)}${rowsShown(win)}`,
          matrixFigure({
            z: cut(turned), ...rows, rowName: T.tokenName, colOffset: c0, cellPx: c.size.head, range,
            highlights: m === 'q' ? [c.rowQ] : [], colorbar: false, numbers: fits(cut(turned), rows.rowLabels),
          })),
      );
    }
  }
  const half = T.dHead / 2;
  const angles = ropeAngles(T.rope.frequencies, c.q);
  const listed = ropeAngleList(angles);
  const scaling = ropeScalingText(T.rope);
  items.push(plot('an', 'split-angles',
    labelled('walk.cap.ropeAngles', {
      query: c.q, label: c.qLabel, half, list: listed, theta: T.rope.theta, dHead: T.dHead,
      scaling: scaling ? ` (${scaling})` : '',
    }),
    matrixFigure({
      z: [angles], rowLabels: [c.qLabel], rowOffset: c.q, rowName: T.queryName, colName: t('walk.word.pair'),
      cellPx: Math.max(c.size.head, 26), kind: 'weights', range: Math.max(...angles, 1e-9), colorbar: false,
      numbers: numbersFitColumns([angles], Math.max(c.size.head, 26), (panel - labelMargin([c.qLabel]) - 12) / half),
    })));
  const layout = narrow
    ? { columns: 'minmax(0, 1fr)', areas: ['qf', 'qa', 'qs', 'qr', 'qt', 'kf', 'ka', 'ks', 'kr', 'kt', 'vf', 'va', 'vs', 'an'] } // ui-text: not UI (CSS grid templates)
    : { columns: 'repeat(3, minmax(0, 1fr))', areas: ['qf kf vf', 'qa ka va', 'qs ks vs', 'qr kr an', 'qt kt an'] }; // ui-text: not UI (CSS grid templates)
  return {
    ...layout,
    overview: overview(c, T.rotated.q[c.slot], { range: signedRange(P.q, T.rotated.q[c.slot]) }),
    items,
  };
}

function scoresStep(T, c) {
  if (T.variant === 'additive') return additiveScoresStep(T, c);
  const linear = T.variant === 'linear'; // S = φ(Q_h)·φ(K_h)ᵀ: the panels show φ of the split q and k
  const split = linear ? featureSplit(scoredSplit(T)) : scoredSplit(T);
  const S = T.steps.scores[c.slot];
  // Side by side, Q_h's rows line up with S's; when windowed, S gets the room that Q_h and K_hᵀ
  // give up. On a narrow stage S goes below them, at the full width.
  const narrow = c.width < 1000;
  const fractions = narrow ? [1, 1, 0] : c.windowed ? [0.8, 0.8, 1.35] : [1, 0.75, 1.15];
  const total = fractions[0] + fractions[1] + fractions[2];
  const sFraction = narrow ? 0.9 : (fractions[2] / total) * 0.94;
  const cell = Math.max(8, Math.min(c.size.square, fitCell(c, sFraction, c.nk)));
  const ktWidth = ((c.width - 110) * fractions[1]) / total - 48;
  const range = signedRange(S);
  const layout = narrow
    ? { columns: 'minmax(0, 1fr) auto minmax(0, 1fr)', areas: ['qh dot kt', 'eq eq eq', 's s s'] } // ui-text: not UI (CSS grid templates)
    : {
      columns: `minmax(0, ${fractions[0]}fr) auto minmax(0, ${fractions[1]}fr) auto minmax(0, ${fractions[2]}fr)`, // ui-text: not UI (CSS grid templates)
      areas: ['qh dot kt eq s'], // ui-text: not UI (CSS grid templates)
    };
  return {
    ...layout,
    overview: overview(c, S, { range, keys: true }),
    items: [
      plot('qh', 'scores-q', `${linear ? 'φ(Q_h)' : 'Q_h'} · ${shape(c.L, T.dHead)}${rowsShown(c.rows)}`,
        matrixFigure({
          z: c.Q(split.q[c.slot]), ...c.qRows, rowName: T.queryName, colOffset: c.c0, cellPx: narrow ? c.size.head : cell,
          highlights: [c.rowQ], colorbar: false, range: signedRange(split.q[c.slot]),
        })),
      op('dot', '·'),
      plot('kt', 'scores-kt', `${linear ? 'φ(K_h)ᵀ' : 'K_hᵀ'} · ${shape(T.dHead, c.S)}${keysShown(c.keys)}`,
        matrixFigure({
          z: transpose(c.K(split.k[c.slot])), rowLabels: null, rowName: t('walk.word.dim'), rowOffset: c.c0, ...c.kCols,
          colName: T.keyName, cellPx: c.size.dims, colPx: ktWidth / c.nk, colorbar: false, maxColTicks: c.windowed ? 40 : 12,
          range: signedRange(split.k[c.slot]),
        })),
      op('eq', '='),
      plot('s', 'scores', labelled(linear ? 'walk.cap.linearScores' : 'walk.cap.scores', { shape: shape(c.L, c.S), query: c.q, label: c.qLabel }),
        squareMap(T, c, c.QK(S), { fraction: sFraction, cellPx: cell, range })),
    ],
  };
}

/**
 * Additive (Bahdanau) scores: the scorer's own W and U (d_keys × A), then the chosen query's row worked
 * out (a = q·W, B = K_h·U, H = tanh(a + B_j), s = H·v) above the whole score matrix, that row outlined.
 */
function additiveScoresStep(T, c) {
  const S = T.steps.scores[c.slot];
  const K = c.K(T.steps.split.k[c.slot]);
  const wq = T.additive.w_q[c.slot];
  const wk = T.additive.w_k[c.slot];
  const v = T.additive.v[c.slot];
  const { a, B, H, s } = additiveRow(T.steps.split.q[c.slot][c.q], K, wq, wk, v);
  const A = v.length;
  const narrow = c.width < 600;
  const cell = c.size.head;
  const range = signedRange(S);
  const label = { query: c.q, label: c.qLabel };
  const keyRows = { ...c.kRows, rowName: T.keyName, cellPx: cell, colorbar: false };
  const dims = (n) => Array.from({ length: n }, (_, i) => String(i));
  const parameter = (z) => matrixFigure({
    z, rowLabels: dims(z.length), rowName: t('walk.word.dim'), colName: t('walk.word.dim'), cellPx: Math.max(cell, 26),
    colorbar: false, range: signedRange(wq, wk), numbers: z.length <= NUMBERS_MAX && A <= NUMBERS_MAX,
  });
  // W and U first; a above B (one query's part added to every key's), then across: B → tanh → H · v = the row; S below.
  const layout = narrow
    ? { columns: 'minmax(0, 1fr)', areas: ['w', 'u', 'a', 'plus', 'b', 'tanh', 'h', 'dot', 'v', 'eq', 'row', 's'] } // ui-text: not UI (CSS grid templates)
    : {
      columns: 'minmax(0, 1fr) auto minmax(0, 1fr) auto auto auto auto', // ui-text: not UI (CSS grid templates)
      areas: ['w . u . . . .', 'a . . . . . .', 'plus . . . . . .', 'b tanh h dot v eq row', 's s s s s s s'], // ui-text: not UI (CSS grid templates)
    };
  return {
    ...layout,
    overview: overview(c, S, { range, keys: true }),
    items: [
      plot('w', 'additive-w', t('walk.cap.additiveW', { head: c.head, shape: shape(wq.length, A) }), parameter(wq)),
      plot('u', 'additive-u', t('walk.cap.additiveU', { head: c.head, shape: shape(wk.length, A) }), parameter(wk)),
      plot('a', 'additive-a', labelled('walk.cap.additiveA', { ...label, A }),
        matrixFigure({
          z: [a], rowLabels: [c.qLabel], rowOffset: c.q, rowName: T.queryName, cellPx: Math.max(cell, 26), colorbar: false,
          range: signedRange([a], B), numbers: A <= NUMBERS_MAX,
        })),
      op('plus', '+'),
      plot('b', 'additive-b', t('walk.cap.additiveB', { shape: shape(c.S, A) }) + rowsShown(c.keys),
        matrixFigure({ z: B, ...keyRows, range: signedRange([a], B), numbers: A <= NUMBERS_MAX && c.nk <= NUMBERS_MAX })),
      op('tanh', 'tanh →'),
      plot('h', 'additive-h', t('walk.cap.additiveH', { shape: shape(c.S, A) }) + rowsShown(c.keys),
        matrixFigure({ z: H, ...keyRows, range: 1, numbers: A <= NUMBERS_MAX && c.nk <= NUMBERS_MAX })),
      op('dot', '·'),
      plot('v', 'additive-v', t('walk.cap.additiveV', { A }),
        matrixFigure({
          z: v.map((x) => [x]), rowLabels: null, rowName: t('walk.word.dim'), cellPx: cell, colorbar: false,
          colTicks: { vals: [0], text: ['v'] }, width: 64, range: signedRange([v]), numbers: A <= NUMBERS_MAX,
        })),
      op('eq', '='),
      plot('row', 'additive-row', labelled('walk.cap.additiveRow', label),
        matrixFigure({
          z: s.map((x) => [x]), ...keyRows, showRowLabels: false, colName: t('walk.word.sum'),
          colTicks: { vals: [0], text: ['s'] }, width: 76, range, numbers: c.nk <= NUMBERS_MAX,
        })),
      plot('s', 'scores', labelled('walk.cap.additiveScores', { shape: shape(c.L, c.S), ...label }),
        squareMap(T, c, c.QK(S), { fraction: 0.6, range })),
    ],
  };
}

/** An L × S map (queries × keys) through its windows, in a panel of about `fraction` of the stage's width. */
function squareMap(T, c, z, { fraction = 0.45, minCell = 30, cellPx = c.size.square, ...extra } = {}) {
  return matrixFigure({
    z, ...c.qRows, rowName: T.queryName, ...c.kCols, colName: T.keyName,
    square: true, highlights: [c.rowQ], numbers: numbersFit(c, fraction, c.nk, minCell),
    cellPx: Math.max(8, Math.min(cellPx, fitCell(c, fraction, c.nk))), // no room left above and below
    ...extra,
  });
}

function scaleStep(T, c) {
  const S = T.steps.scores[c.slot];
  const scaled = T.steps.scale[c.slot];
  const range = signedRange(S);
  const factor = T.scale.toFixed(4);
  // what × factor does to them (and, soft-capped, what the cap does after it)
  const effect = T.softcap ? 'softcap' : T.scale === 1 ? 'same' : Math.abs(T.scale) < 1 ? 'shrink' : 'grow';
  return {
    columns: 'minmax(0, 1fr) auto auto minmax(0, 1fr)', // ui-text: not UI (CSS grid templates)
    areas: ['s f eq ss'], // ui-text: not UI (CSS grid templates)
    overview: overview(c, scaled, { range, keys: true }),
    items: [
      plot('s', 'scale-before', t('walk.cap.scaleBefore', { shape: shape(c.L, c.S) }), squareMap(T, c, c.QK(S), { range, maxColTicks: 40 })),
      op('f', T.softcap ? `× ${factor}, ±${T.softcap}` : `× ${factor}`, 'scale-factor'),
      op('eq', '='),
      plot('ss', 'scale', t(`walk.cap.scale.${effect}`, { factor, cap: T.softcap }), squareMap(T, c, c.QK(scaled), { range, maxColTicks: 40 })),
    ],
  };
}

/**
 * The note beside the mask step: a sliding window's (its width W, the W − 1 keys before the query it keeps, and,
 * when the input is no longer than the window, that it hides no more than the causal mask), the causal mask's,
 * "nothing is hidden", or none (a mask or a bias the captions say).
 */
function maskNote(T, c, masked) {
  if (T.window) {
    return { noteKey: c.L > T.window ? 'window' : 'windowShort', noteValues: { window: T.window, before: T.window - 1, n: c.L } };
  }
  return { noteKey: T.causal ? 'causal' : masked ? null : 'noMask' };
}

function maskStep(T, c) {
  const scaled = T.steps.scale[c.slot];
  const masked = T.steps.mask[c.slot];
  const hidden = hasHidden(masked);
  const biased = T.positions === 'alibi'; // the mask step adds ALiBi's bias as well
  const M = addedMask(c.QK(scaled), c.QK(masked)); // the drawn window's: the bias, −∞ where hidden
  const range = signedRange(scaled);
  const cell = Math.max(8, Math.round(c.size.square * 0.8));
  // On a narrow stage: "scaled + M" on one line, "= masked" under them.
  const narrow = c.width < 1000;
  const fraction = narrow ? 0.45 : 0.28;
  return {
    columns: narrow ? 'minmax(0, 1fr) auto minmax(0, 1fr)' : 'minmax(0, 1fr) auto minmax(0, 1fr) auto minmax(0, 1fr)', // ui-text: not UI (CSS grid templates)
    areas: narrow ? ['ss plus m', '. eq mm'] : ['ss plus m eq mm'], // ui-text: not UI (CSS grid templates)
    ...maskNote(T, c, hidden || biased),
    overview: overview(c, masked, { range, keys: true }),
    items: [
      plot('ss', 'mask-before', t('walk.cap.maskBefore', { shape: shape(c.L, c.S) }),
        squareMap(T, c, c.QK(scaled), { range, cellPx: cell, maxColTicks: 40, fraction })),
      op('plus', '+'),
      plot('m', 'mask-matrix', t(biased ? 'walk.cap.maskBias' : hidden ? 'walk.cap.maskMatrix' : 'walk.cap.maskNone'),
        // "−∞" in the 9 px cell font is about 17 px wide in Chromium: from 22 px cells on, the grey between
        // two of them keeps them apart (16 px cells ran them together at 800 px).
        squareMap(T, c, M, {
          range: biased ? signedRange(M) : 1, cellPx: cell, colorbar: false, highlights: [], maxColTicks: 40, fraction, minCell: 22,
        })),
      op('eq', '='),
      plot('mm', 'mask', t(hidden ? 'walk.cap.maskedHidden' : 'walk.cap.masked', { shape: shape(c.L, c.S) }),
        squareMap(T, c, c.QK(masked), { range, cellPx: cell, maxColTicks: 40, fraction })),
    ],
  };
}

function softmaxStep(T, c) {
  const A = T.steps.softmax[c.slot];
  const full = A[c.q];
  const row = full.slice(c.keys.start, c.keys.end);
  const sum = (values) => values.reduce((total, x) => total + x, 0);
  const shownA = c.QK(A);
  const stacked = c.width < STACKED_PX; // a phone: the weights, (the soft weights) and the bars one under another
  // Weights on a scale up to the drawn window's largest: a few keys ([CLS], [SEP]) often take
  // most of the weight, which would leave every other drawn cell white.
  // ProbSparse: the head's active queries outlined in pink (all of them when every query is active: nothing to mark)
  const sparse = T.variant === 'probsparse' && T.probsparse && !isFullAttention(T) ? T.probsparse : null;
  const active = sparse ? sparse.active[Math.min(c.head, sparse.active.length - 1)] : [];
  const marks = active.filter((r) => r >= c.rows.start && r < c.rows.end).map((r) => ({ row0: r, row1: r, colour: MARKED }));
  const heat = squareMap(T, c, shownA, {
    kind: 'weights', range: valueMax(shownA), fraction: stacked ? 0.9 : 0.5, minCell: 24, cellPx: Math.min(c.size.square, 26),
    highlights: [...marks, c.rowQ],
  });
  const label = { query: c.q, label: c.qLabel };
  const caption = c.keys.windowed
    ? labelled('walk.cap.barsWindow', { ...label, k0: c.keys.start, k1: c.keys.end - 1, share: sum(row).toFixed(3), total: sum(full).toFixed(3) })
    : labelled('walk.cap.bars', { ...label, sum: sum(full).toFixed(3) });
  // What the weights are, and what their rows sum to: 1, except a row whose every key is hidden (all 0).
  const weighting = stepVariant(T, 'softmax') ?? 'softmax';
  const rowsSum = t(everyRowSeesAKey(T.steps.mask[c.slot]) ? 'walk.cap.rowsSumOne' : 'walk.cap.rowsSumOneOrZero');
  const soft = T.soft ? T.soft[c.slot] : null; // a hard variant: its soft weights beside the one-hot ones
  const softItems = soft ? [plot('soft', 'softmax-soft', t('toy.soft.caption', { shape: shape(c.L, c.S) }),
    squareMap(T, c, c.QK(soft), { kind: 'weights', range: valueMax(c.QK(soft)), fraction: stacked ? 0.9 : 0.33, minCell: 24, cellPx: Math.min(c.size.square, 26) }))] : [];
  const layout = stacked
    ? { columns: 'minmax(0, 1fr)', areas: soft ? ['a', 'soft', 'bars'] : ['a', 'bars'] } // ui-text: not UI (CSS grid templates)
    : {
      columns: soft ? 'minmax(0, 1fr) minmax(0, 1fr) minmax(0, 1fr)' : 'minmax(0, 1fr) minmax(0, 1fr)', // ui-text: not UI (CSS grid templates)
      areas: [soft ? 'a soft bars' : 'a bars'], // ui-text: not UI (CSS grid templates)
    };
  return {
    ...layout,
    overview: overview(c, A, { kind: 'weights', range: valueMax(A), keys: true }),
    items: [
      plot('a', 'softmax', t(`walk.cap.weights.${weighting}`, { shape: shape(c.L, c.S), rows: rowsSum }), heat),
      ...softItems,
      plot('bars', 'softmax-bars', caption,
        barsFigure({
          values: row, labels: c.kCols.colLabels, offset: c.keys.start, name: T.keyName, height: heat.layout.height,
          barPx: ((stacked ? c.width : c.width / 2) - 80) / c.nk,
        })),
    ],
  };
}

function weightedSumStep(T, c) {
  const weights = T.steps.softmax[c.slot][c.q];
  const V = T.steps.split.v[c.slot];
  const shownWeights = weights.slice(c.keys.start, c.keys.end);
  const W = weightedRows(shownWeights, c.K(V));
  const out = T.steps.weighted_sum[c.slot][c.q];
  const cell = c.size.head;
  const left = labelMargin(c.kRows.rowLabels);
  const common = { colOffset: c.v0, cellPx: cell, colorbar: false, showRowLabels: false, ...c.kRows };
  // Each on its own colour scale: one weighted row is small next to the sum of all of them.
  const rowsRange = signedRange(weightedRows(weights, V));
  const sumRange = signedRange([out]);
  const sumCaption = c.keys.windowed
    ? t('walk.cap.wsSumWindow', { n: c.S, from: c.keys.start, to: c.keys.end - 1, query: c.q, dHead: T.dValues })
    : t('walk.cap.wsSum', { query: c.q, dHead: T.dValues });
  return {
    columns: 'auto auto minmax(0, 1fr) auto minmax(0, 1fr)', // ui-text: not UI (CSS grid templates)
    areas: ['a x v eq w', '. . . . sum'],
    overview: overview(c, T.steps.softmax[c.slot], { kind: 'weights', range: valueMax(T.steps.softmax[c.slot]), keys: true }),
    items: [
      plot('a', 'ws-weights', t('walk.cap.wsWeights', { query: c.q }),
        matrixFigure({
          z: shownWeights.map((w) => [w]), ...c.kRows, rowName: T.keyName, colName: t('walk.word.weight'), kind: 'weights',
          range: valueMax([shownWeights]), cellPx: cell, colorbar: false, colTicks: { vals: [0], text: ['a'] },
          width: left + 64, numbers: c.nk <= NUMBERS_MAX,
        })),
      op('x', '×'),
      plot('v', 'ws-v', t('walk.cap.wsV', { shape: shape(c.S, T.dValues) }) + rowsShown(c.keys),
        matrixFigure({ z: c.K(V), ...common, rowName: T.keyName, range: signedRange(V) })),
      op('eq', '='),
      plot('w', 'ws-rows', t('walk.cap.wsRows') + rowsShown(c.keys),
        matrixFigure({ z: W, ...common, rowName: T.keyName, range: rowsRange })),
      plot('sum', 'ws-sum', sumCaption,
        matrixFigure({
          z: [out], rowLabels: [c.qLabel], rowOffset: c.q, rowName: T.queryName, ...common, range: sumRange,
          cellPx: Math.max(cell, 26), highlights: [{}],
        })),
    ],
  };
}

function concatStep(T, c) {
  const C = T.steps.concat;
  const strip = [C[c.q]];
  const range = signedRange(C);
  const centres = Array.from({ length: T.nHeads }, (_, h) => h * T.dValues + (T.dValues - 1) / 2);
  return {
    columns: 'minmax(0, 1fr)',
    areas: ['strip', 'c'],
    overview: overview(c, C, { range }),
    items: [
      plot('strip', 'concat-strip', labelled('walk.cap.concatStrip', { query: c.q, label: c.qLabel, nHeads: T.nHeads, dModel: C[0].length, head: c.head }),
        matrixFigure({
          z: strip, rowLabels: [c.qLabel], rowOffset: c.q, rowName: T.queryName, cellPx: c.size.small ? 40 : 34, range,
          slots: T.dValues, highlights: [c.valueCols], colorbar: false, margin: { r: 56 },
          colTicks: { vals: centres, text: centres.map((_, h) => escapeForPlotly(t('walk.word.head', { head: h }))) },
        })),
      plot('c', 'concat', t('walk.cap.concat', { last: T.nHeads - 1, shape: shape(c.L, C[0].length) }) + rowsShown(c.rows),
        matrixFigure({
          z: c.Q(C), ...c.qRows, rowName: T.tokenName, cellPx: c.size.wide, range, slots: T.dValues,
          highlights: [c.valueCols, c.rowQ],
        })),
    ],
  };
}

function outputStep(T, c) {
  const C = T.steps.concat;
  const O = T.steps.output;
  const toy = T.source === 'toy';
  const beside = (c.size.small && numbersFit(c, 0.42, T.dModel)) || (c.windowed && c.width >= 1000);
  const cell = c.size.small ? c.size.wide : beside ? 13 : Math.max(5, Math.round(c.size.wide * 0.85));
  const items = [
    plot('c', 'output-concat', t('walk.cap.outputConcat', { shape: shape(c.L, C[0].length) }) + rowsShown(c.rows),
      matrixFigure({ z: c.Q(C), ...c.qRows, rowName: T.tokenName, cellPx: cell, slots: T.dValues, range: signedRange(C) })),
    op('op', toy && !T.biased ? '· W_o =' : '· W_o + b_o ='),
    plot('o', 'output', t(toy ? 'walk.cap.outputToy' : 'walk.cap.output', { shape: shape(c.L, T.dModel) }) + rowsShown(c.rows),
      matrixFigure({ z: c.Q(O), ...c.qRows, rowName: T.tokenName, cellPx: cell, highlights: [c.rowQ], range: signedRange(O) })),
  ];
  return {
    overview: overview(c, O),
    ...(beside
      ? { columns: 'minmax(0, 1fr) auto minmax(0, 1fr)', areas: ['c op o'], items } // ui-text: not UI (CSS grid templates)
      : { columns: 'minmax(0, 1fr)', areas: ['c', 'op', 'o'], items }),
  };
}

const BUILDERS = {
  input: inputStep,
  project: projectStep,
  split: splitStep,
  scores: scoresStep,
  scale: scaleStep,
  mask: maskStep,
  softmax: softmaxStep,
  weighted_sum: weightedSumStep,
  concat: concatStep,
  output: outputStep,
};

/**
 * One step as a grid of items: {columns, areas, items, noteKey, overview, windows}. `columns` and
 * `areas` are CSS grid-template values; each item is a plot ({area, key, caption, figure}; a
 * caption is a string or parts: strings and {data} for quoted token text) or an operator
 * ({area, text, id}). noteKey names a note of i18n/steps.js (noMask, causal, window, windowShort) or is null;
 * noteValues fill its placeholders.
 * `overview` is null, or (when the token axes are windowed) the step's whole main matrix with
 * the windows, for figures/matrix.js overviewFigure; `windows` are the windows drawn.
 * @param {StepData} T
 * @param {string} step
 * @param {{head: number, query: number, keys?: number|null, width?: number}} selection
 */
export function stepSpec(T, step, selection) {
  const build = BUILDERS[step];
  if (!build) throw new Error(`unknown step ${step}`); // ui-text: not UI (a programming error)
  const c = context(T, selection);
  const spec = { noteKey: null, noteValues: {}, ...build(T, c), windows: { size: c.windowSize, rows: c.rows, keys: c.keys } };
  const shifted = (step === 'scores' || step === 'softmax') && !spec.noteKey ? destationaryNote(T) : null;
  return shifted ? { ...spec, ...shifted } : spec;
}

const short = (x) => String(Number(x.toFixed(4)));

/**
 * The note on the scores and softmax steps when the de-stationary factors are on (τ ≠ 1 or some δ ≠ 0), read from the
 * answer: `destationaryEqual` (one δ for every key: the softmax ignores it) or `destationary` (per-key δ:
 * key j's weight is multiplied by e^(scale·δ_j) against the others; `top`, the key of the largest δ, gains most).
 * Null otherwise.
 */
export function destationaryNote(T) {
  const delta = T.delta ?? [];
  const tau = T.tau ?? 1;
  if (tau === 1 && delta.every((x) => x === 0)) return null;
  const equal = delta.every((x) => x === delta[0]);
  const top = delta.reduce((best, x, j) => (x > delta[best] ? j : best), 0);
  return {
    noteKey: equal ? 'destationaryEqual' : 'destationary',
    noteValues: {
      tau: short(tau), delta: equal ? short(delta[0] ?? 0) : delta.map(short).join(', '), scale: T.scale.toFixed(4),
      top: `k${top}`, gain: short(Math.exp(T.scale * (delta[top] - Math.min(...delta)))),
    },
  };
}

const QK_FIXED_PX = 228; // the query/key grid's width outside its two 1fr columns (measured: 706 − 2 × 239 at 800 px)

/**
 * The query/key view of one query (bertviz's neuron view): q, the keys k_j of the key window,
 * the products q ∘ k_j and their sums, which are row `query` of the scores.
 * @returns {{columns: string, areas: string[], items: object[], sums: number[], scores: number[],
 *   windows: object}} sums and scores cover the key window
 */
export function queryKeySpec(T, selection) {
  const c = context(T, selection);
  const qv = scoredSplit(T).q[c.slot][c.q];
  const Kfull = scoredSplit(T).k[c.slot];
  const K = c.K(Kfull);
  const products = elementwiseRows(qv, K);
  const sums = rowSums(products);
  const range = signedRange([qv], Kfull);
  const cell = c.size.small ? 38 : clamp(Math.round(420 / c.nk), 8, 20);
  const left = labelMargin(c.kRows.rowLabels.concat([c.qLabel]));
  // The two 1fr columns share what the sums (76 px), the two operators (about 104 px) and the grid's four
  // 12 px gaps leave of the width; q and K_h have row labels in them, the products none. Numbers are written
  // only in cells wide enough for them (at 800 px, d_head 8 gives K_h 22 px columns: too narrow for "−4.36").
  const stacked = c.width < STACKED_PX;
  const panel = stacked ? c.width : (c.width - QK_FIXED_PX) / 2;
  const labelledCol = (panel - left - 6) / T.dHead;
  const bareCol = (panel - 12) / T.dHead;
  const layout = stacked
    ? { columns: 'minmax(0, 1fr)', areas: ['q', 'k', 'x', 'p', 'eq', 's'] } // ui-text: not UI (CSS grid templates)
    : { columns: 'minmax(0, 1fr) auto minmax(0, 1fr) auto auto', areas: ['q . . . .', 'k x p eq s'] }; // ui-text: not UI (CSS grid templates)
  return {
    ...layout,
    sums,
    scores: T.steps.scores[c.slot][c.q].slice(c.keys.start, c.keys.end),
    windows: { size: c.windowSize, rows: c.rows, keys: c.keys },
    items: [
      plot('q', 'qk-q', labelled('walk.cap.qkQ', { query: c.q, label: c.qLabel, dHead: T.dHead }),
        matrixFigure({
          z: [qv], rowLabels: [c.qLabel], rowOffset: c.q, rowName: T.queryName, colOffset: c.c0, cellPx: Math.max(cell, 26),
          colPx: labelledCol, range, colorbar: false, margin: { l: left }, numbers: numbersFitColumns([qv], Math.max(cell, 26), labelledCol),
        })),
      plot('k', 'qk-k', t('walk.cap.qkK', { shape: shape(c.S, T.dHead) }) + rowsShown(c.keys),
        matrixFigure({
          z: K, ...c.kRows, rowName: T.keyName, colOffset: c.c0, cellPx: cell, colPx: labelledCol, range, colorbar: false,
          margin: { l: left }, numbers: numbersFitColumns(K, cell, labelledCol),
        })),
      op('x', '∘ q ='),
      plot('p', 'qk-products', t('walk.cap.qkProducts'),
        matrixFigure({
          z: products, ...c.kRows, rowName: T.keyName, colOffset: c.c0, cellPx: cell, colPx: stacked ? labelledCol : bareCol,
          colorbar: false, showRowLabels: stacked, margin: stacked ? { l: left } : {},
          numbers: numbersFitColumns(products, cell, stacked ? labelledCol : bareCol),
        })),
      op('eq', stacked ? 'Σ ↓' : 'Σ →'),
      plot('s', 'qk-sums', 'q·k_j',
        matrixFigure({
          z: sums.map((v) => [v]), ...c.kRows, rowName: T.keyName, colName: t('walk.word.sum'), cellPx: cell,
          colorbar: false, showRowLabels: stacked, margin: stacked ? { l: left } : {}, colTicks: { vals: [0], text: ['Σ'] },
          width: stacked ? 76 + left : 76, numbers: c.nk <= NUMBERS_MAX,
        })),
    ],
  };
}
