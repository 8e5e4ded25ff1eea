// What each step of multi-head attention shows: a trace (from /api/v1/trace or
// /api/v1/toy) -> a grid of labelled Plotly figures and operators for one step.
// Pure: no DOM, no fetch. views/step-stage.js lays the result out and draws it.
import { barsFigure } from './bars.js';
import { escapeForPlotly } from './escape.js';
import { labelMargin } from './axes.js';
import { matrixFigure, NUMBERS_MAX, signedRange, valueMax } from './matrix.js';

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
 * @property {number} dHead
 * @property {number} scale
 * @property {number[]} heads the heads the per-head steps hold, in their order
 * @property {boolean} causal
 * @property {number|null} layer
 * @property {object} steps the API's steps
 */

/** A /api/v1/trace response -> StepData. */
export function fromTrace(trace) {
  const labels = trace.tokens.map((token) => token.text);
  return {
    source: 'trace',
    queryLabels: labels,
    keyLabels: labels,
    queryName: 'query',
    keyName: 'key',
    tokenName: 'token',
    dModel: trace.d_model,
    nHeads: trace.n_heads,
    dHead: trace.d_head,
    scale: trace.scale,
    heads: trace.heads,
    causal: false,
    layer: trace.layer,
    steps: trace.steps,
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
    scale: toy.scale,
    heads: Array.from({ length: toy.n_heads }, (_, h) => h),
    causal,
    layer: null,
    steps: toy.steps,
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

/** 0 where the masked scores keep a value, null (−∞) where they hide it. */
export function maskOf(masked) {
  return masked.map((row) => row.map((v) => (v === null ? null : 0)));
}

const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));

// ---- layout pieces --------------------------------------------------------------

const plot = (area, key, caption, figure) => ({ type: 'plot', area, key, caption, figure });
const op = (area, text, id = null, small = false) => ({ type: 'op', area, text, id, small });

/** Pixel sizes of one row for each kind of matrix, from the number of tokens. */
function sizes(T) {
  const n = Math.max(T.queryLabels.length, T.keyLabels.length);
  const small = T.dModel <= NUMBERS_MAX && n <= NUMBERS_MAX;
  return {
    small,
    wide: small ? 34 : clamp(Math.round(300 / n), 5, 18), // N × d_model
    thin: small ? 26 : clamp(Math.round(80 / n), 2, 5), // N × d_model, as a small overview
    head: small ? 38 : clamp(Math.round(380 / n), 8, 22), // N × d_head
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

/** What the step functions need: the head's position in the per-head arrays, its columns, the query. */
function context(T, { head, query, width = 1200 }) {
  const slot = Math.max(0, T.heads.indexOf(head));
  const h = T.heads[slot];
  const c0 = h * T.dHead;
  const L = T.queryLabels.length;
  const q = clamp(query, 0, L - 1);
  return {
    width,
    sideMargins: labelMargin(T.queryLabels) + 80, // row labels, colour bar, gaps
    slot,
    head: h,
    c0,
    c1: c0 + T.dHead - 1,
    q,
    qLabel: T.queryLabels[q],
    L,
    S: T.keyLabels.length,
    size: sizes(T),
    rowQ: { row0: q, row1: q },
    slotCols: { col0: c0, col1: c0 + T.dHead - 1 },
  };
}

const shape = (rows, cols) => `${rows}×${cols}`;
const quoted = (label) => `“${label}”`;
const tokenBottom = (labels) => Math.round(12 + 6 * Math.max(0, ...labels.map((l) => Math.min(Array.from(String(l)).length, 14))));

// ---- one function per step --------------------------------------------------------

function inputStep(T, c) {
  if (T.source === 'trace') {
    const X = T.steps.input;
    return {
      columns: 'minmax(0, 1fr)',
      areas: ['x'],
      items: [
        plot('x', 'input', `X · ${shape(c.L, T.dModel)}: ${c.L} tokens × d_model ${T.dModel}, entering layer ${T.layer}`,
          matrixFigure({ z: X, rowLabels: T.queryLabels, rowName: 'token', cellPx: Math.max(c.size.wide, 8), highlights: [c.rowQ] })),
      ],
    };
  }
  const { q, k, v } = T.steps.input;
  return {
    columns: 'repeat(3, minmax(0, 1fr))',
    areas: ['q k v'],
    items: [
      plot('q', 'input-q', `queries X_q · ${shape(c.L, T.dModel)}`,
        matrixFigure({ z: q, rowLabels: T.queryLabels, rowName: null, cellPx: c.size.wide, highlights: [c.rowQ] })),
      plot('k', 'input-k', `keys X_k · ${shape(c.S, T.dModel)}`,
        matrixFigure({ z: k, rowLabels: T.keyLabels, rowName: null, cellPx: c.size.wide })),
      plot('v', 'input-v', `values X_v · ${shape(c.S, T.dModel)}`,
        matrixFigure({ z: v, rowLabels: T.keyLabels, rowName: null, cellPx: c.size.wide })),
    ],
  };
}

function projectStep(T, c) {
  const P = T.steps.project;
  const toy = T.source === 'toy';
  const rows = { q: [T.queryLabels, T.tokenName], k: [T.keyLabels, T.tokenName], v: [T.keyLabels, T.tokenName] };
  const formula = {
    q: toy ? 'Q = X_q·W_q' : 'Q = X·W_q + b_q',
    k: toy ? 'K = X_k·W_k' : 'K = X·W_k + b_k',
    v: toy ? 'V = X_v·W_v' : 'V = X·W_v + b_v',
  };
  const items = ['q', 'k', 'v'].map((m) => {
    const [labels, name] = rows[m];
    return plot(m, `project-${m}`, `${formula[m]} · ${shape(labels.length, T.dModel)} · head ${c.head}'s columns ${c.c0}–${c.c1} outlined`,
      matrixFigure({ z: P[m], rowLabels: labels, rowName: name, cellPx: c.size.wide, highlights: [c.slotCols], slots: T.dHead }));
  });
  return c.size.small
    ? { columns: 'repeat(3, minmax(0, 1fr))', areas: ['q k v'], items }
    : { columns: 'minmax(0, 1fr)', areas: ['q', 'k', 'v'], items };
}

function splitStep(T, c) {
  const P = T.steps.project;
  const split = T.steps.split;
  const items = [];
  for (const m of ['q', 'k', 'v']) {
    const labels = m === 'q' ? T.queryLabels : T.keyLabels;
    const name = T.tokenName;
    const range = signedRange(P[m]);
    const big = m.toUpperCase();
    items.push(
      plot(`${m}f`, `split-${m}-full`, `${big} · ${shape(labels.length, T.dModel)}: ${T.nHeads} slices of ${T.dHead}`,
        matrixFigure({
          z: P[m], rowLabels: labels, rowName: name, cellPx: c.size.thin, highlights: [c.slotCols], slots: T.dHead,
          colorbar: false, showRowLabels: c.size.small, range,
        })),
      op(`${m}a`, `↓ columns ${c.c0}–${c.c1}`, null, true),
      plot(`${m}s`, `split-${m}`, `${big}_h = ${big}[:, ${c.c0}:${c.c1 + 1}] · head ${c.head} · ${shape(labels.length, T.dHead)}`,
        matrixFigure({
          z: split[m][c.slot], rowLabels: labels, rowName: name, colOffset: c.c0, cellPx: c.size.head, range,
          highlights: m === 'q' ? [c.rowQ] : [], colorbar: false,
        })),
    );
  }
  return { columns: 'repeat(3, minmax(0, 1fr))', areas: ['qf kf vf', 'qa ka va', 'qs ks vs'], items };
}

function scoresStep(T, c) {
  const split = T.steps.split;
  const S = T.steps.scores[c.slot];
  const bottom = tokenBottom(T.keyLabels);
  const cell = Math.max(8, Math.min(c.size.square, fitCell(c, 0.36, c.S))); // Q_h's rows line up with S's
  return {
    columns: 'minmax(0, 1fr) auto minmax(0, 0.75fr) auto minmax(0, 1.15fr)',
    areas: ['qh dot kt eq s'],
    items: [
      plot('qh', 'scores-q', `Q_h · ${shape(c.L, T.dHead)}`,
        matrixFigure({
          z: split.q[c.slot], rowLabels: T.queryLabels, rowName: T.queryName, colOffset: c.c0, cellPx: cell,
          highlights: [c.rowQ], colorbar: false, margin: { b: bottom },
        })),
      op('dot', '·'),
      plot('kt', 'scores-kt', `K_hᵀ · ${shape(T.dHead, c.S)}`,
        matrixFigure({
          z: transpose(split.k[c.slot]), rowLabels: null, rowName: 'dim', rowOffset: c.c0, colLabels: T.keyLabels,
          colName: T.keyName, cellPx: c.size.dims, colorbar: false, maxColTicks: 12,
        })),
      op('eq', '='),
      plot('s', 'scores', `S = Q_h·K_hᵀ · ${shape(c.L, c.S)} · row ${c.q} ${quoted(c.qLabel)} outlined`,
        squareMap(T, c, S, { fraction: 0.36, cellPx: cell, margin: { b: bottom } })),
    ],
  };
}

/** An L × S map (queries × keys) in a panel of about `fraction` of the stage's width. */
function squareMap(T, c, z, { fraction = 0.45, minCell = 30, cellPx = c.size.square, ...extra } = {}) {
  return matrixFigure({
    z, rowLabels: T.queryLabels, rowName: T.queryName, colLabels: T.keyLabels, colName: T.keyName,
    square: true, highlights: [c.rowQ], numbers: numbersFit(c, fraction, c.S, minCell),
    cellPx: Math.max(8, Math.min(cellPx, fitCell(c, fraction, c.S))), // no room left above and below
    ...extra,
  });
}

function scaleStep(T, c) {
  const S = T.steps.scores[c.slot];
  const scaled = T.steps.scale[c.slot];
  const range = signedRange(S);
  return {
    columns: 'minmax(0, 1fr) auto auto minmax(0, 1fr)',
    areas: ['s f eq ss'],
    items: [
      plot('s', 'scale-before', `scores S · ${shape(c.L, c.S)}`, squareMap(T, c, S, { range, maxColTicks: 24 })),
      op('f', `× ${T.scale.toFixed(4)}`, 'scale-factor'),
      op('eq', '='),
      plot('ss', 'scale', `S × ${T.scale.toFixed(4)} · same colours as S: the values shrink`, squareMap(T, c, scaled, { range, maxColTicks: 24 })),
    ],
  };
}

function maskStep(T, c) {
  const scaled = T.steps.scale[c.slot];
  const masked = T.steps.mask[c.slot];
  const hidden = masked.some((row) => row.some((v) => v === null));
  const range = signedRange(scaled);
  const cell = Math.max(8, Math.round(c.size.square * 0.8));
  return {
    columns: 'minmax(0, 1fr) auto minmax(0, 1fr) auto minmax(0, 1fr)',
    areas: ['ss plus m eq mm'],
    noteKey: T.causal ? 'causal' : hidden ? null : 'noMask',
    items: [
      plot('ss', 'mask-before', `scaled scores · ${shape(c.L, c.S)}`,
        squareMap(T, c, scaled, { range, cellPx: cell, maxColTicks: 16, fraction: 0.28 })),
      op('plus', '+'),
      plot('m', 'mask-matrix', hidden ? 'mask M: 0 = visible, −∞ = hidden' : 'mask M: all 0 (nothing hidden)',
        squareMap(T, c, maskOf(masked), {
          range: 1, cellPx: cell, colorbar: false, highlights: [], maxColTicks: 16, fraction: 0.28, minCell: 16,
        })),
      op('eq', '='),
      plot('mm', 'mask', `masked scores · ${shape(c.L, c.S)}${hidden ? ' · grey = −∞' : ''}`,
        squareMap(T, c, masked, { range, cellPx: cell, maxColTicks: 16, fraction: 0.28 })),
    ],
  };
}

function softmaxStep(T, c) {
  const A = T.steps.softmax[c.slot];
  const row = A[c.q];
  const total = row.reduce((sum, x) => sum + x, 0);
  const heat = squareMap(T, c, A, {
    kind: 'weights', range: valueMax(A), fraction: 0.5, minCell: 24, cellPx: Math.min(c.size.square, 26),
  });
  return {
    columns: 'minmax(0, 1fr) minmax(0, 1fr)',
    areas: ['a bars'],
    items: [
      plot('a', 'softmax', `softmax(masked scores), row by row · ${shape(c.L, c.S)} · each row sums to 1`, heat),
      plot('bars', 'softmax-bars', `row ${c.q} ${quoted(c.qLabel)}: its weights over the keys (sum ${total.toFixed(3)})`,
        barsFigure({ values: row, labels: T.keyLabels, name: T.keyName, height: heat.layout.height })),
    ],
  };
}

function weightedSumStep(T, c) {
  const weights = T.steps.softmax[c.slot][c.q];
  const V = T.steps.split.v[c.slot];
  const W = weightedRows(weights, V);
  const out = T.steps.weighted_sum[c.slot][c.q];
  const cell = c.size.head;
  const left = labelMargin(T.keyLabels);
  const common = { colOffset: c.c0, cellPx: cell, colorbar: false, showRowLabels: false };
  // Each on its own colour scale: one weighted row is small next to the sum of all of them.
  const rowsRange = signedRange(W);
  const sumRange = signedRange([out]);
  return {
    columns: 'auto auto minmax(0, 1fr) auto minmax(0, 1fr)',
    areas: ['a x v eq w', '. . . . sum'],
    items: [
      plot('a', 'ws-weights', `weights a (row ${c.q})`,
        matrixFigure({
          z: weights.map((w) => [w]), rowLabels: T.keyLabels, rowName: T.keyName, colName: 'weight', kind: 'weights',
          range: valueMax([weights]), cellPx: cell, colorbar: false, colTicks: { vals: [0], text: ['a'] },
          width: left + 64, numbers: c.S <= NUMBERS_MAX,
        })),
      op('x', '×'),
      plot('v', 'ws-v', `V_h · ${shape(c.S, T.dHead)}: one value row per key`,
        matrixFigure({ z: V, rowLabels: T.keyLabels, rowName: T.keyName, ...common, range: signedRange(V) })),
      op('eq', '='),
      plot('w', 'ws-rows', `a_j · v_j: each value row scaled by its weight`,
        matrixFigure({ z: W, rowLabels: T.keyLabels, rowName: T.keyName, ...common, range: rowsRange })),
      plot('sum', 'ws-sum', `Σ of the rows above: query ${c.q}'s output · 1×${T.dHead}`,
        matrixFigure({
          z: [out], rowLabels: [c.qLabel], rowName: T.queryName, ...common, range: sumRange, cellPx: Math.max(cell, 26),
          highlights: [{}],
        })),
    ],
  };
}

function concatStep(T, c) {
  const C = T.steps.concat;
  const strip = [C[c.q]];
  const range = signedRange(C);
  const centres = Array.from({ length: T.nHeads }, (_, h) => h * T.dHead + (T.dHead - 1) / 2);
  return {
    columns: 'minmax(0, 1fr)',
    areas: ['strip', 'c'],
    items: [
      plot('strip', 'concat-strip', `query ${c.q} ${quoted(c.qLabel)}: the ${T.nHeads} heads' outputs side by side · 1×${T.dModel} · head ${c.head}'s slot outlined`,
        matrixFigure({
          z: strip, rowLabels: [c.qLabel], rowName: T.queryName, cellPx: c.size.small ? 40 : 34, range,
          slots: T.dHead, highlights: [c.slotCols], colorbar: false, margin: { r: 56 },
          colTicks: { vals: centres, text: centres.map((_, h) => escapeForPlotly(`head ${h}`)) },
        })),
      plot('c', 'concat', `concat(head 0, …, head ${T.nHeads - 1}) · ${shape(c.L, T.dModel)}`,
        matrixFigure({
          z: C, rowLabels: T.queryLabels, rowName: T.tokenName, cellPx: c.size.wide, range, slots: T.dHead,
          highlights: [c.slotCols, c.rowQ],
        })),
    ],
  };
}

function outputStep(T, c) {
  const C = T.steps.concat;
  const O = T.steps.output;
  const toy = T.source === 'toy';
  const cell = c.size.small ? c.size.wide : Math.max(5, Math.round(c.size.wide * 0.85));
  const items = [
    plot('c', 'output-concat', `concat · ${shape(c.L, T.dModel)}`,
      matrixFigure({ z: C, rowLabels: T.queryLabels, rowName: T.tokenName, cellPx: cell, slots: T.dHead })),
    op('op', toy ? '· W_o =' : '· W_o + b_o ='),
    plot('o', 'output', `output · ${shape(c.L, T.dModel)}${toy ? '' : ' · before the residual add and LayerNorm'}`,
      matrixFigure({ z: O, rowLabels: T.queryLabels, rowName: T.tokenName, cellPx: cell, highlights: [c.rowQ] })),
  ];
  return c.size.small
    ? { columns: 'minmax(0, 1fr) auto minmax(0, 1fr)', areas: ['c op o'], items }
    : { columns: 'minmax(0, 1fr)', areas: ['c', 'op', 'o'], items };
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
 * One step as a grid of items: {columns, areas, items, noteKey?}. `columns` and `areas` are
 * CSS grid-template values; each item is a plot ({area, key, caption, figure}) or an operator
 * ({area, text, id}). noteKey names a note of i18n/steps.js (noMask, causal) or is null.
 */
export function stepSpec(T, step, selection) {
  const build = BUILDERS[step];
  if (!build) throw new Error(`unknown step ${step}`);
  return { noteKey: null, ...build(T, context(T, selection)) };
}

/**
 * The query/key view of one query (bertviz's neuron view): q, every key k_j, the products
 * q ∘ k_j and their sums, which are row `query` of the scores.
 * @returns {{columns: string, areas: string[], items: object[], sums: number[], scores: number[]}}
 */
export function queryKeySpec(T, selection) {
  const c = context(T, selection);
  const qv = T.steps.split.q[c.slot][c.q];
  const K = T.steps.split.k[c.slot];
  const products = elementwiseRows(qv, K);
  const sums = rowSums(products);
  const range = signedRange([qv], K);
  const cell = c.size.small ? 38 : clamp(Math.round(320 / c.S), 8, 20);
  const left = labelMargin(T.keyLabels.concat([c.qLabel]));
  return {
    columns: 'minmax(0, 1fr) auto minmax(0, 1fr) auto auto',
    areas: ['q . . . .', 'k x p eq s'],
    sums,
    scores: T.steps.scores[c.slot][c.q],
    items: [
      plot('q', 'qk-q', `q: query ${c.q} ${quoted(c.qLabel)} · 1×${T.dHead}`,
        matrixFigure({
          z: [qv], rowLabels: [c.qLabel], rowName: T.queryName, colOffset: c.c0, cellPx: Math.max(cell, 26),
          range, colorbar: false, margin: { l: left },
        })),
      plot('k', 'qk-k', `keys k_j · ${shape(c.S, T.dHead)}`,
        matrixFigure({
          z: K, rowLabels: T.keyLabels, rowName: T.keyName, colOffset: c.c0, cellPx: cell, range, colorbar: false,
          margin: { l: left },
        })),
      op('x', '∘ q ='),
      plot('p', 'qk-products', `q ∘ k_j: the products, dimension by dimension`,
        matrixFigure({
          z: products, rowLabels: T.keyLabels, rowName: T.keyName, colOffset: c.c0, cellPx: cell, colorbar: false,
          showRowLabels: false,
        })),
      op('eq', 'Σ →'),
      plot('s', 'qk-sums', `q·k_j`,
        matrixFigure({
          z: sums.map((v) => [v]), rowLabels: T.keyLabels, rowName: T.keyName, colName: 'sum', cellPx: cell,
          colorbar: false, showRowLabels: false, colTicks: { vals: [0], text: ['Σ'] }, width: 76, numbers: c.S <= NUMBERS_MAX,
        })),
    ],
  };
}
