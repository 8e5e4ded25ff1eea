// Data -> the backward pass of the toy as a list of steps in reverse order (output first, inputs
// last), each step one or more pairs of matrices: the forward value and the gradient dL/d it, for
// one head; and the Plotly figures of those matrices (gradients on a diverging scale centred on 0).
// Pure: no DOM, no fetch. The answer is POST /api/v1/toy/backward's.
import { matrixFigure } from './matrix.js';

/** The steps, in the order the gradients are computed (the forward's steps reversed). */
export const BACKWARD_STEPS = Object.freeze([
  'output', 'concat', 'weighted_sum', 'v', 'softmax', 'scores', 'q', 'k', 'weights', 'biases', 'inputs',
]);

// Notation written beside each step (not translated: the notes' symbols). One name each, app-wide:
// A the attention weights and dA their gradient; dQ, dK, dV the projections' outputs' gradients
// (the notes' dProj); W, U and v the additive scorer's own parameters (never W_q, W_k: the projections).
export const FORMULAS = Object.freeze({
  output: 'dY = ∂L/∂Y',
  concat: 'dC = dY · W_oᵀ',
  weighted_sum: 'dctx_h = dC[:, h]',
  v: 'dV_h = A_hᵀ · dctx_h',
  softmax: 'dA_h = dctx_h · V_hᵀ',
  scores: 'dS_h = A_h ⊙ (dA_h − rowsum(dA_h ⊙ A_h)) × scale',
  q: 'dQ_h = dS_h · K_h',
  k: 'dK_h = dS_hᵀ · Q_h',
  weights: 'dW_o = Cᵀ · dY,  dW_v = X_vᵀ · dV,  dW_k = X_kᵀ · dK,  dW_q = X_qᵀ · dQ',
  biases: 'db_o = Σ_t dY[t],  db_v = Σ_t dV[t],  db_k = Σ_t dK[t],  db_q = Σ_t dQ[t]',
  inputs: 'dX_q = dQ · W_qᵀ,  dX_k = dK · W_kᵀ,  dX_v = dV · W_vᵀ',
});

// The scores' and q's / k's formulas where a variant changes them.
export const VARIANT_FORMULAS = Object.freeze({
  'scores.none': 'dS_h = 0  (A_h one-hot)',
  'scores.straight_through': 'dS_h = Ã_h ⊙ (dA_h − rowsum(dA_h ⊙ Ã_h)) × scale  (Ã_h soft)',
  'q.additive': 'dq_i = Σ_j dS_ij · (v ⊙ (1 − tanh²(q_i W + k_j U))) · Wᵀ',
  'k.additive': 'dk_j = Σ_i dS_ij · (v ⊙ (1 − tanh²(q_i W + k_j U))) · Uᵀ',
  'q.general': 'dQ_h = dS_h · K_h · W_s,hᵀ',
  'k.general': 'dK_h = dS_hᵀ · Q_h · W_s,h',
  'weights.general': `${FORMULAS.weights},  dW_s,h = Q_hᵀ · dS_h · K_h`,
  'q.cosine': 'dq_i = Σ_j dS_ij · (k̂_j − (q̂_i · k̂_j) q̂_i) / |q_i|',
  'k.cosine': 'dk_j = Σ_i dS_ij · (q̂_i − (q̂_i · k̂_j) k̂_j) / |k_j|',
});

/** The formula written beside a step of this answer. With τ ≠ 1 (scores · τ + δ) the scores' gradient reaches q, k
 * and W_s times τ. */
export function formulaOf(id, answer) {
  const variant = id === 'scores' ? `scores.${answer.flow}` : `${id}.${answer.forward.variant}`;
  const formula = VARIANT_FORMULAS[variant] ?? FORMULAS[id];
  if ((answer.forward.tau ?? 1) === 1) return formula;
  if (id === 'q' || id === 'k') return formula.replace('= ', '= τ · ');
  return id === 'weights' ? formula.replace('dW_s,h = ', 'dW_s,h = τ · ') : formula;
}

const ROUNDING = 1e-9; // relative to the largest gradient: below this a colour would show rounding only
const labels = (n, prefix) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const dims = (n) => Array.from({ length: n }, (_, i) => String(i));
const columns = (matrix, from, to) => matrix.map((row) => row.slice(from, to));

/**
 * The steps of one head's backward pass.
 * @param {object} answer the /api/v1/toy/backward answer
 * @param {number} head
 * @returns {Array<{id: string, formula: string, pairs: Array<{name: string, symbol: string,
 *   forward: number[][]|null, forwardSymbol: string|null, gradient: number[][], rows: string[],
 *   cols: string[], weights: boolean}>}>} `weights`: the forward value is attention weights (0…1)
 */
export function backwardSteps(answer, head) {
  const g = answer.gradients;
  const f = answer.forward;
  const s = f.steps;
  const h = Math.min(head, f.n_heads - 1);
  const L = s.output.length;
  const S = s.input.k.length;
  const q = labels(L, 'q');
  const k = labels(S, 'k');
  const dk = f.d_keys;
  const floor = ROUNDING * largest(g);
  const pair = (name, symbol, forward, forwardSymbol, gradient, rows, cols, weights = false) => ({
    name, symbol, forward, forwardSymbol, gradient, rows: rows ?? dims(gradient.length),
    cols: cols ?? dims(gradient[0].length), weights, floor,
  });
  const steps = [
    ['output', [pair('output', 'dL/dY', s.output, 'Y', g.output, q)]],
    ['concat', [pair('concat', 'dC', s.concat, 'C', g.concat, q)]],
    ['weighted_sum', [pair('weighted_sum', `dctx_${h}`, s.weighted_sum[h], `ctx_${h}`, g.weighted_sum[h], q)]],
    ['v', [pair('v', `dV_${h}`, s.split.v[h], `V_${h}`, g.v[h], k)]],
    ['softmax', [pair('softmax', `dA_${h}`, s.softmax[h], `A_${h}`, g.softmax[h], q, k, true)]],
    ['scores', [pair('scores', `dS_${h}`, s.scores[h], `S_${h}`, g.scores[h], q, k)]],
    ['q', [pair('q', `dQ_${h}`, columns(s.project.q, h * dk, (h + 1) * dk), `Q_${h}`, g.q[h], q)]],
    ['k', [pair('k', `dK_${h}`, columns(s.project.k, h * dk, (h + 1) * dk), `K_${h}`, g.k[h], k)]],
    ['weights', [
      ...['o', 'v', 'k', 'q'].map((w) => pair(`w_${w}`, `dW_${w}`, f.weights[w], `W_${w}`, g[`w_${w}`], null)),
      ...(g.additive_w_q ? [ // the additive scorer's own parameters W, U, v (the answer's w_q, w_k, v), this head's
        pair('additive_w_q', `dW[${h}]`, f.additive.w_q[h], `W[${h}]`, g.additive_w_q[h], null),
        pair('additive_w_k', `dU[${h}]`, f.additive.w_k[h], `U[${h}]`, g.additive_w_k[h], null),
        pair('additive_v', `dv[${h}]`, [f.additive.v[h]], `v[${h}]`, [g.additive_v[h]], ['']),
      ] : []),
      ...(g.general_w ? [pair('general_w', `dW_s,${h}`, f.general_w[h], `W_s,${h}`, g.general_w[h], null)] : []),
    ]],
    ['biases', ['o', 'v', 'k', 'q'].map((w) => pair(`b_${w}`, `db_${w}`, null, null, [g[`b_${w}`]], ['']))],
    ['inputs', [
      pair('queries', 'dX_q', s.input.q, 'X_q', g.queries, q),
      pair('keys', 'dX_k', s.input.k, 'X_k', g.keys, k),
      pair('values', 'dX_v', s.input.v, 'X_v', g.values, k),
      ...(g.input ? [pair('input', 'dX', s.input.q, 'X', g.input, q)] : []),
    ]],
  ];
  return steps.map(([id, pairs]) => ({ id, formula: formulaOf(id, answer), pairs }));
}

/** The largest |value| in nested arrays (0 for none). */
function largest(value) {
  if (Array.isArray(value)) return value.reduce((m, x) => Math.max(m, largest(x)), 0);
  if (value && typeof value === 'object') return Object.values(value).reduce((m, x) => Math.max(m, largest(x)), 0);
  return typeof value === 'number' ? Math.abs(value) : 0;
}

/**
 * Half-range of a gradient's colour scale: its largest |value|, but at least `floor` (a small
 * fraction of the largest gradient of the answer), so a gradient that is zero up to rounding
 * (the key bias's, ~1e-15) stays white instead of filling the whole scale; 1 for all zeros.
 */
export function gradientRange(matrix, floor = 0) {
  const m = largest(matrix);
  return m > 0 ? Math.max(m, floor) : 1;
}

const CELL_PX = 26;
const BAR_ROWS = 3; // a matrix of fewer rows is too short for a readable colour bar (its numbers are written)

/** A gradient: diverging colours centred on 0 (purple negative, white 0, orange positive). */
export function gradientFigure(p) {
  return matrixFigure({
    z: p.gradient, kind: 'signed', range: gradientRange(p.gradient, p.floor), rowLabels: p.rows, rowName: null,
    colLabels: p.cols, colName: null, cellPx: CELL_PX, showRowLabels: p.rows.some(Boolean),
    colorbar: p.gradient.length >= BAR_ROWS,
  });
}

/** The forward value beside it: weights on their 0…1 scale, anything else signed. */
export function forwardFigure(p) {
  return matrixFigure({
    z: p.forward, kind: p.weights ? 'weights' : 'signed', range: p.weights ? 1 : null, rowLabels: p.rows,
    rowName: null, colLabels: p.cols, colName: null, cellPx: CELL_PX, colorbar: p.forward.length >= BAR_ROWS,
  });
}

/** The largest |difference| check as the page words it: "3e-16" (or "0"). */
export function formatDiff(x) {
  return x === 0 ? '0' : x.toExponential(0).replace('e-', 'e−');
}
