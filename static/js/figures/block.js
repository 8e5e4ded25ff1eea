// The rest of the Transformer block around the attention (/steps after the output projection): the
// residual sums, the norms, the MLP and, on a pre-norm model's last layer, the final norm. A trace's
// `block` (POST /api/v1/trace, ../shared/API.md "The whole block in the trace") -> the walk's step list,
// each step's numbers for the chosen token (its norm's mean and variance, the MLP's units left near
// zero, the activation recomputed here) and its grid of Plotly figures. Pure: no DOM, no fetch (the words
// come from the page's dictionary through t()); views/step-stage.js draws what blockSpec returns.
import { lang, t } from '../i18n/index.js';
import { FONT, HIGHLIGHT, TEXT_COLOUR } from './axes.js';
import { escapeForPlotly } from './escape.js';
import { matrixFigure, signedRange } from './matrix.js';
import { STEPS, windowsOf } from './steps.js';

/** The block's steps around the attention (model/steps.py BLOCK_STEPS), in the order of that tuple. */
export const BLOCK_STEPS = Object.freeze([
  'block_input', 'norm_1', 'post_norm_1', 'add_1', 'norm_2', 'mlp_gate', 'mlp_gate_act', 'mlp_hidden', 'mlp_act',
  'mlp_out', 'post_norm_2', 'add_2', 'final_norm',
]);
const IS_BLOCK = new Set(BLOCK_STEPS);

/** Whether `step` is one of the block's steps (not the attention's). */
export const isBlockStep = (step) => IS_BLOCK.has(step);

/**
 * The walkthrough's steps for a trace's block, in the order the model computes them: a post-norm model
 * (BERT) the attention's steps, then add_1 … norm_2 (its block_input is the attention's input, shown
 * once, as the input step); a pre-norm model (GPT-2, the Llama family) block_input and norm_1 (what the
 * attention reads) first, then the attention's steps, then the rest. Without a block: the attention's.
 * @param {{order: string, steps: {name: string}[]}|null} block
 * @returns {string[]}
 */
export function walkSteps(block) {
  if (!block) return [...STEPS];
  const names = block.steps.map((s) => s.name);
  const before = block.order === 'pre' ? names.slice(0, names.indexOf('norm_1') + 1) : [];
  const after = names.filter((name) => name !== 'block_input' && !before.includes(name));
  return [...before, ...STEPS, ...after];
}

// ---- numbers ----------------------------------------------------------------------

/** ‖v‖₂. */
export function norm2(v) {
  let s = 0;
  for (const x of v) s += x * x;
  return Math.sqrt(s);
}

const norms = new WeakMap(); // a trace's matrix -> ‖row‖ of every row (each step's line and the next one's)

/** ‖row‖ of every row. */
export function rowNorms(matrix) {
  if (!norms.has(matrix)) norms.set(matrix, matrix.map(norm2));
  return norms.get(matrix);
}

/**
 * The norm of one vector as the model computes it. LayerNorm: μ = mean(x), σ² = mean((x − μ)²) (the biased
 * variance, as torch's layer_norm), x̂ = (x − μ)/√(σ² + ε). RMSNorm: ms = mean(x²), x̂ = x/√(ms + ε).
 * @returns {{mean: number|null, variance: number|null, meanSquare: number|null, denominator: number, normalised: number[]}}
 */
export function normStats(x, kind, eps) {
  const n = x.length;
  if (kind === 'rms') {
    let ms = 0;
    for (const v of x) ms += v * v;
    ms /= n;
    const denominator = Math.sqrt(ms + eps);
    return { mean: null, variance: null, meanSquare: ms, denominator, normalised: x.map((v) => v / denominator) };
  }
  let mean = 0;
  for (const v of x) mean += v;
  mean /= n;
  let variance = 0;
  for (const v of x) variance += (v - mean) ** 2;
  variance /= n;
  const denominator = Math.sqrt(variance + eps);
  return { mean, variance, meanSquare: null, denominator, normalised: x.map((v) => (v - mean) / denominator) };
}

/** γ ⊙ x̂ + β (β null: none, RMSNorm). */
export const scaleShift = (normalised, weight, bias) => normalised.map((v, d) => v * weight[d] + (bias ? bias[d] : 0));

// erf by Abramowitz & Stegun 7.1.26 (|error| ≤ 1.5 × 10⁻⁷): JavaScript has no Math.erf, and this is closer than
// float32, the numbers it is compared with, can tell at the sizes GELU's inputs have.
function erf(x) {
  const sign = x < 0 ? -1 : 1;
  const a = Math.abs(x);
  const k = 1 / (1 + 0.3275911 * a);
  const poly = k * (0.254829592 + k * (-0.284496736 + k * (1.421413741 + k * (-1.453152027 + k * 1.061405429))));
  return sign * (1 - poly * Math.exp(-a * a));
}

const tanhGelu = (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

/** The MLP's activations by the names the trace gives them (model/nets/config.py ACTIVATIONS). */
export const ACTIVATIONS = Object.freeze({
  gelu: (x) => 0.5 * x * (1 + erf(x / Math.SQRT2)),
  gelu_new: tanhGelu,
  gelu_pytorch_tanh: tanhGelu,
  relu: (x) => Math.max(0, x),
  silu: (x) => x / (1 + Math.exp(-x)),
});

/** The activation's name as the page writes it (notation: the same in every language). */
const ACTIVATION_NAMES = Object.freeze({ // ui-text: not UI (the functions' names)
  gelu: 'GELU', gelu_new: 'GELU (tanh)', gelu_pytorch_tanh: 'GELU (tanh)', relu: 'ReLU', silu: 'SiLU',
});
export const activationName = (name) => ACTIVATION_NAMES[name] ?? name;

/** Share of a row's largest |value| under which a unit counts as near zero. */
export const NEAR_ZERO = 0.01;

/**
 * How many entries of `row` are near zero: |v| < NEAR_ZERO × max |v| of the row.
 * @returns {{count: number, threshold: number}}
 */
export function nearZero(row, fraction = NEAR_ZERO) {
  let top = 0;
  for (const v of row) top = Math.max(top, Math.abs(v));
  const threshold = fraction * top;
  let count = 0;
  for (const v of row) if (Math.abs(v) < threshold) count += 1;
  return { count, threshold };
}

/** How many entries of `row` are below 0. */
export const negatives = (row) => row.reduce((n, v) => n + (v < 0 ? 1 : 0), 0);

/** The largest |a − b| over two equally shaped matrices (or rows). */
export function maxAbsDiff(a, b) {
  let worst = 0;
  for (let i = 0; i < a.length; i += 1) {
    if (Array.isArray(a[i])) worst = Math.max(worst, maxAbsDiff(a[i], b[i]));
    else worst = Math.max(worst, Math.abs(a[i] - b[i]));
  }
  return worst;
}

const checks = new WeakMap(); // a block's arrays -> {step: check}: the same for every query, made once per trace

/**
 * The activation recomputed here from the trace's own numbers, for every token: act(mlp_hidden), or in a
 * gated MLP act(mlp_gate) for mlp_gate_act and mlp_gate_act ⊙ mlp_hidden for mlp_act; against the model's.
 * (One pass without new arrays: 512 tokens × 1536 units in about 20 ms.)
 * @returns {{diff: number, scale: number}} the largest difference and the largest |value| it is out of
 */
export function activationCheck(block, step) {
  const A = block.arrays;
  const done = checks.get(A)?.[`${block.activation} ${step}`];
  if (done) return done;
  const act = ACTIVATIONS[block.activation];
  const got = A[step];
  const product = step === 'mlp_act' && block.gated;
  const input = step === 'mlp_gate_act' ? A.mlp_gate : product ? A.mlp_gate_act : A.mlp_hidden;
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < got.length; i += 1) {
    const row = got[i];
    const x = input[i];
    const up = product ? A.mlp_hidden[i] : null;
    for (let j = 0; j < row.length; j += 1) {
      const want = product ? x[j] * up[j] : act(x[j]);
      diff = Math.max(diff, Math.abs(want - row[j]));
      scale = Math.max(scale, Math.abs(row[j]));
    }
  }
  const check = { diff, scale };
  checks.set(A, { ...checks.get(A), [`${block.activation} ${step}`]: check });
  return check;
}

/**
 * The server's MLP run again on each token's input row by itself (`mlp_alone`, a batch of one token) against
 * the rows it gave with every token at once (`mlp_out`); null when the trace has no `mlp_alone`.
 * @returns {{diff: number, scale: number}|null}
 */
export function aloneCheck(block) {
  const A = block.arrays;
  if (!A.mlp_alone) return null;
  const done = checks.get(A)?.alone;
  if (done) return done;
  let scale = 0;
  for (const row of A.mlp_out) for (const v of row) scale = Math.max(scale, Math.abs(v));
  const check = { diff: maxAbsDiff(A.mlp_alone, A.mlp_out), scale };
  checks.set(A, { ...checks.get(A), alone: check });
  return check;
}

/** Whether a recomputed float64 value and the model's float32 one agree: 10⁻⁵ of the values' size. */
export const agrees = ({ diff, scale }) => diff <= 1e-5 * Math.max(1, scale);

/** A number in a caption: 4 significant digits, a true minus sign; tiny ones in e-notation. */
export function num(v) {
  if (!Number.isFinite(v)) return String(v);
  const text = v !== 0 && Math.abs(v) < 1e-3 ? v.toExponential(2) : String(Number(v.toPrecision(4)));
  return text.replace('-', '−');
}

// ---- what each step reads -----------------------------------------------------------

/** The array `name` of the trace: a block step's, or 'attention' for the attention's output (steps.output). */
export function arrayOf(T, name) {
  return name === 'attention' ? T.steps.output : T.block.arrays[name];
}

/** What the MLP reads: norm_1 after a post-norm model's first sum, norm_2 in a pre-norm block. */
export const mlpInput = (block) => (block.order === 'post' ? 'norm_1' : 'norm_2');

/**
 * What a block step computes from, by kind: stream (the residual stream entering), norm {input},
 * add {residual, sublayer}, project {input} (D → d_ff), act {input} (the activation), product {gate, up},
 * down {input, mlpIn} (d_ff → D; mlpIn: the MLP's input row, from which alone the row is made).
 */
export function recipe(block, step) {
  const has = (name) => name in block.arrays;
  const pre = block.order === 'pre';
  switch (step) {
    case 'block_input': return { kind: 'stream' };
    case 'norm_1': return { kind: 'norm', input: pre ? 'block_input' : 'add_1' };
    case 'norm_2': return { kind: 'norm', input: pre ? 'add_1' : 'add_2' };
    case 'post_norm_1': return { kind: 'norm', input: 'attention' };
    case 'post_norm_2': return { kind: 'norm', input: 'mlp_out' };
    case 'final_norm': return { kind: 'norm', input: 'add_2' };
    case 'add_1': return { kind: 'add', residual: 'block_input', sublayer: has('post_norm_1') ? 'post_norm_1' : 'attention' };
    case 'add_2': return { kind: 'add', residual: pre ? 'add_1' : 'norm_1', sublayer: has('post_norm_2') ? 'post_norm_2' : 'mlp_out' };
    case 'mlp_gate':
    case 'mlp_hidden': return { kind: 'project', input: mlpInput(block) };
    case 'mlp_gate_act': return { kind: 'act', input: 'mlp_gate' };
    case 'mlp_act': return block.gated ? { kind: 'product', gate: 'mlp_gate_act', up: 'mlp_hidden' } : { kind: 'act', input: 'mlp_hidden' };
    case 'mlp_out': return { kind: 'down', input: 'mlp_act', mlpIn: mlpInput(block) };
    default: throw new Error(`unknown block step ${step}`); // ui-text: not UI (a programming error)
  }
}

/** The step's main input (what ‖·‖ "before" is taken of), or null for the stream entering the block. */
function beforeOf(block, step) {
  const r = recipe(block, step);
  if (r.kind === 'add') return r.residual;
  if (r.kind === 'product') return r.up;
  return r.input ?? null;
}

/** The norm step's weights: γ and β (null for RMSNorm). */
const paramsOf = (block, step) => block.params[step] ?? { weight: null, bias: null };

/**
 * The numbers a block step's captions say for token `q`, computed from the trace (tests recompute them):
 * ‖before‖ and ‖after‖; a norm's mean, variance or mean square; an add's three norms; the MLP's
 * d_ff units near zero and negative, and the activation recomputed for every token.
 */
export function blockFacts(T, step, q) {
  const B = T.block;
  const r = recipe(B, step);
  const after = arrayOf(T, step)[q];
  const beforeName = beforeOf(B, step);
  const facts = { kind: r.kind, after: norm2(after), before: beforeName ? norm2(arrayOf(T, beforeName)[q]) : null };
  if (r.kind === 'norm') {
    const x = arrayOf(T, r.input)[q];
    const stats = normStats(x, B.norm, B.eps);
    const { weight, bias } = paramsOf(B, step);
    const y = weight ? scaleShift(stats.normalised, weight, bias) : null;
    Object.assign(facts, stats, { recomputedDiff: y ? maxAbsDiff(y, after) : null });
  } else if (r.kind === 'add') {
    const x = arrayOf(T, r.residual)[q];
    const s = arrayOf(T, r.sublayer)[q];
    Object.assign(facts, { residual: norm2(x), sublayer: norm2(s), recomputedDiff: maxAbsDiff(x.map((v, d) => v + s[d]), after) });
  } else if (r.kind === 'act' || r.kind === 'product') {
    const { count, threshold } = nearZero(after);
    const pre = r.kind === 'act' ? arrayOf(T, r.input)[q] : null;
    Object.assign(facts, {
      nearZero: count, threshold, width: after.length, negative: pre ? negatives(pre) : null, check: activationCheck(B, step),
    });
  } else if (r.kind === 'project') {
    Object.assign(facts, { negative: negatives(after), width: after.length });
  }
  return facts;
}

// ---- figures -------------------------------------------------------------------------

const BEFORE = '#9aa3b0';
const AFTER = '#2171b5';

/**
 * ‖x‖ of every token before and after a step, as two small lines (token index across), the chosen
 * token marked. Token text only in the escaped hover.
 * @param {{before: number[]|null, after: number[], labels: string[], query: number, beforeName: string,
 *   afterName: string, height?: number}} input
 */
export function normLineFigure({ before, after, labels, query, beforeName, afterName, height = 190 }) {
  const x = after.map((_, i) => i);
  const hover = (name) => labels.map((label, i) => escapeForPlotly(`${i} “${label}” · ${name}`));
  const line = (y, name, colour, dash) => ({
    type: 'scatter', mode: y.length > 64 ? 'lines' : 'lines+markers', x, y, name: escapeForPlotly(name),
    line: { color: colour, width: 1.5, dash }, marker: { size: 4, color: colour },
    customdata: hover(name), hovertemplate: '%{customdata}: %{y:.4g}<extra></extra>',
  });
  const data = [];
  if (before) data.push(line(before, beforeName, BEFORE, 'dot'));
  data.push(line(after, afterName, AFTER, 'solid'));
  const marked = [after[query]];
  if (before) marked.push(before[query]);
  data.push({
    type: 'scatter', mode: 'markers', x: marked.map(() => query), y: marked, showlegend: false,
    marker: { size: 9, color: HIGHLIGHT, line: { color: '#ffffff', width: 1 } },
    customdata: marked.map(() => escapeForPlotly(`${query} “${labels[query]}”`)), hovertemplate: '%{customdata}: %{y:.4g}<extra></extra>',
  });
  return {
    data,
    layout: {
      font: { family: FONT, size: 12, color: TEXT_COLOUR },
      height,
      margin: { t: 8, r: 8, l: 44, b: 30 },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: '#ffffff',
      showlegend: true,
      legend: { orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom', font: { size: 11 } },
      xaxis: { title: { text: '', standoff: 2 }, tickformat: 'd', fixedrange: true, gridcolor: '#eef0f3', zeroline: false },
      yaxis: { rangemode: 'tozero', fixedrange: true, gridcolor: '#e6e9ee', tickformat: '.3~g' },
      hoverlabel: { font: { family: FONT, size: 12 } },
    },
  };
}

/**
 * The chosen token's units before and after an activation, sorted by their input (across) with the output up:
 * the line through them draws the function with the model's own numbers. One SVG path, not a marker per
 * unit (measured in Chromium here at d_ff 1536: 112 ms to draw the markers, 20 ms the line).
 */
export function activationFigure({ pre, post, xName, yName, height = 220 }) {
  const order = pre.map((_, j) => j).sort((a, b) => pre[a] - pre[b]);
  const unit = t('steps.block.word.unit');
  return {
    data: [{
      type: 'scatter', mode: 'lines', x: order.map((j) => pre[j]), y: order.map((j) => post[j]),
      line: { color: AFTER, width: 2 },
      customdata: order.map((j) => escapeForPlotly(`${unit} ${j}`)), hovertemplate: '%{customdata}: %{x:.4g} → %{y:.4g}<extra></extra>',
    }],
    layout: {
      font: { family: FONT, size: 12, color: TEXT_COLOUR },
      height,
      margin: { t: 8, r: 8, l: 48, b: 40 },
      paper_bgcolor: '#ffffff',
      plot_bgcolor: '#ffffff',
      xaxis: { title: { text: escapeForPlotly(xName), standoff: 2, font: { size: 11 } }, fixedrange: true, gridcolor: '#eef0f3', zerolinecolor: '#9aa3b0' },
      yaxis: { title: { text: escapeForPlotly(yName), standoff: 2, font: { size: 11 } }, fixedrange: true, gridcolor: '#e6e9ee', zerolinecolor: '#9aa3b0' },
      hoverlabel: { font: { family: FONT, size: 12 } },
    },
  };
}

/** One vector as a one-row heatmap, its own colour range; `name` (notation) labels the row. */
function strip(row, name, range = null) {
  return matrixFigure({
    z: [row], rowLabels: [name], rowName: null, colName: t('steps.block.word.dim'), cellPx: 24, range: range ?? signedRange([row]),
    numbers: row.length <= 16, colorbar: false, margin: { l: 64, r: 8 },
  });
}

const plot = (area, key, caption, figure) => ({ type: 'plot', area, key, caption, figure });

/** What each array is called in the captions (notation and the dictionary's words). */
function symbol(B, name) {
  const sym = (key) => t(`steps.block.sym.${key}`);
  const pre = B.order === 'pre';
  const act = activationName(B.activation);
  switch (name) {
    case 'block_input': return 'x';
    case 'attention': return sym(pre ? 'attentionPre' : 'attention');
    case 'post_norm_1': return sym('normAttention');
    case 'add_1': return `x + ${symbol(B, recipe(B, 'add_1').sublayer)}`;
    case 'norm_1': return pre ? sym('norm1pre') : sym('norm1post');
    case 'norm_2': return pre ? sym('norm2pre') : sym('norm2post');
    case 'mlp_gate': return 'g = x·W_gate';
    case 'mlp_gate_act': return `${act}(g)`;
    case 'mlp_hidden': return B.gated ? 'u = x·W_up' : 'h = x·W_in + b';
    case 'mlp_act': return B.gated ? `${act}(g) ⊙ u` : `${act}(h)`;
    case 'mlp_out': return sym(pre ? 'mlpPre' : 'mlp');
    case 'post_norm_2': return sym('normMlp');
    case 'add_2': return `x + ${symbol(B, recipe(B, 'add_2').sublayer)}`;
    case 'final_norm': return sym('final');
    default: return name;
  }
}

/** "‖v‖ = 12.3" for a caption. */
const normSaid = (v) => `‖·‖ = ${num(norm2(v))}`;

/**
 * The strips and the other figures of a step, laid out: the strips stacked at the full width (a d_ff row
 * needs every pixel), the other figures side by side under them when the stage is wide, stacked when not.
 */
function layout(c, strips, extra) {
  const items = [...strips, ...extra];
  if (c.width < 900 || extra.length < 2) return { columns: 'minmax(0, 1fr)', areas: items.map((s) => s.area), items };
  const n = extra.length;
  const across = (area) => Array(n).fill(area).join(' ');
  return {
    columns: `repeat(${n}, minmax(0, 1fr))`,
    areas: [...strips.map((s) => across(s.area)), extra.map((s) => s.area).join(' ')],
    items,
  };
}

/** The norm line item of a step: ‖before‖ and ‖after‖ of every token. */
function normLine(T, step, c, area = 'line') {
  const B = T.block;
  const beforeName = beforeOf(B, step);
  const after = rowNorms(arrayOf(T, step));
  const before = beforeName ? rowNorms(arrayOf(T, beforeName)) : null;
  const caption = before
    ? t('steps.block.cap.normLine', { before: num(before[c.q]), after: num(after[c.q]), query: c.q })
    : t('steps.block.cap.normLineOne', { after: num(after[c.q]), query: c.q });
  return plot(area, `block-${step}-norms`, caption, normLineFigure({
    before, after, labels: T.queryLabels, query: c.q,
    beforeName: `‖${t('steps.block.word.before')}‖`, afterName: `‖${t('steps.block.word.after')}‖`,
  }));
}

function streamStep(T, step, c) {
  const x = arrayOf(T, step)[c.q];
  const strips = [plot('x', `block-${step}-x`, `x · ${normSaid(x)}`, strip(x, 'x'))];
  return layout(c, strips, [normLine(T, step, c)]);
}

function normStep(T, step, c) {
  const B = T.block;
  const r = recipe(B, step);
  const x = arrayOf(T, r.input)[c.q];
  const y = arrayOf(T, step)[c.q];
  const stats = normStats(x, B.norm, B.eps);
  const { weight, bias } = paramsOf(B, step);
  const statsText = B.norm === 'rms'
    ? t('steps.block.cap.rms', { ms: num(stats.meanSquare), root: num(stats.denominator) })
    : t('steps.block.cap.layer', { mean: num(stats.mean), variance: num(stats.variance), root: num(stats.denominator) });
  const strips = [
    plot('x', `block-${step}-x`, `${symbol(B, r.input)} · ${normSaid(x)}`, strip(x, 'x')),
    plot('xhat', `block-${step}-xhat`, `${statsText} · ${normSaid(stats.normalised)}`, strip(stats.normalised, 'x̂')),
  ];
  if (weight) strips.push(plot('gamma', `block-${step}-gamma`, t('steps.block.cap.gamma'), strip(weight, 'γ')));
  if (bias) strips.push(plot('beta', `block-${step}-beta`, t('steps.block.cap.beta'), strip(bias, 'β')));
  const diff = weight ? maxAbsDiff(scaleShift(stats.normalised, weight, bias), y) : null;
  const check = diff === null ? '' : ` · ${t('steps.block.cap.recomputed', { diff: num(diff) })}`;
  strips.push(plot('y', `block-${step}-y`, `${symbol(B, step)} · ${normSaid(y)}${check}`, strip(y, 'y')));
  return layout(c, strips, [normLine(T, step, c)]);
}

function addStep(T, step, c) {
  const B = T.block;
  const r = recipe(B, step);
  const x = arrayOf(T, r.residual)[c.q];
  const s = arrayOf(T, r.sublayer)[c.q];
  const y = arrayOf(T, step)[c.q];
  const range = signedRange([x, s, y]);
  const strips = [
    plot('x', `block-${step}-x`, `${symbol(B, r.residual)} · ${normSaid(x)}`, strip(x, 'x', range)),
    plot('s', `block-${step}-s`, `+ ${symbol(B, r.sublayer)} · ${normSaid(s)}`, strip(s, '+', range)),
    plot('y', `block-${step}-y`, `= ${symbol(B, step)} · ${normSaid(y)}`, strip(y, '=', range)),
  ];
  return layout(c, strips, [normLine(T, step, c)]);
}

function projectStep(T, step, c) {
  const B = T.block;
  const r = recipe(B, step);
  const x = arrayOf(T, r.input)[c.q];
  const h = arrayOf(T, step)[c.q];
  const f = blockFacts(T, step, c.q);
  const strips = [
    plot('x', `block-${step}-x`, `${symbol(B, r.input)} · ${x.length} · ${normSaid(x)}`, strip(x, 'x')),
    plot('h', `block-${step}-h`, `${symbol(B, step)} · ${t('steps.block.cap.project', { dModel: x.length, dff: h.length, negative: f.negative })}`,
      strip(h, step === 'mlp_gate' ? 'g' : B.gated ? 'u' : 'h')),
  ];
  return layout(c, strips, [normLine(T, step, c)]);
}

function checkText(check) {
  return t(agrees(check) ? 'steps.block.cap.checkSame' : 'steps.block.cap.checkDiffers', { diff: num(check.diff) });
}

function actStep(T, step, c) {
  const B = T.block;
  const r = recipe(B, step);
  const h = arrayOf(T, r.input)[c.q];
  const a = arrayOf(T, step)[c.q];
  const f = blockFacts(T, step, c.q);
  const act = activationName(B.activation);
  const name = step === 'mlp_gate_act' ? 'g' : 'h';
  const strips = [
    plot('h', `block-${step}-h`, `${symbol(B, r.input)} · ${normSaid(h)}`, strip(h, name)),
    plot('a', `block-${step}-a`, `${symbol(B, step)} · ${t('steps.block.cap.nearZero', {
      count: f.nearZero, width: f.width, threshold: num(f.threshold), negative: f.negative, act,
    })}`, strip(a, `${act}(${name})`)),
  ];
  const extra = [
    plot('curve', `block-${step}-curve`, `${t('steps.block.cap.curve', { act, query: c.q })} · ${checkText(f.check)}`,
      activationFigure({ pre: h, post: a, xName: name, yName: `${act}(${name})` })),
    normLine(T, step, c),
  ];
  return layout(c, strips, extra);
}

function productStep(T, step, c) {
  const B = T.block;
  const r = recipe(B, step);
  const g = arrayOf(T, r.gate)[c.q];
  const u = arrayOf(T, r.up)[c.q];
  const a = arrayOf(T, step)[c.q];
  const f = blockFacts(T, step, c.q);
  const act = activationName(B.activation);
  const strips = [
    plot('g', `block-${step}-g`, `${symbol(B, r.gate)} · ${normSaid(g)}`, strip(g, `${act}(g)`)),
    plot('u', `block-${step}-u`, `⊙ ${symbol(B, r.up)} · ${normSaid(u)}`, strip(u, 'u')),
    plot('a', `block-${step}-a`, `= ${symbol(B, step)} · ${t('steps.block.cap.nearZeroProduct', {
      count: f.nearZero, width: f.width, threshold: num(f.threshold),
    })} · ${checkText(f.check)}`, strip(a, '⊙')),
  ];
  return layout(c, strips, [normLine(T, step, c)]);
}

/** The caption of the MLP's alone-check: the rows agree (within float rounding) or they do not. */
function aloneSaid(block) {
  const check = aloneCheck(block);
  if (!check) return '';
  return t(agrees(check) ? 'steps.block.cap.aloneSame' : 'steps.block.cap.aloneDiffers', { diff: num(check.diff) });
}

function downStep(T, step, c) {
  const B = T.block;
  const r = recipe(B, step);
  const a = arrayOf(T, r.input)[c.q];
  const o = arrayOf(T, step)[c.q];
  const x = arrayOf(T, r.mlpIn)[c.q];
  const strips = [
    plot('a', `block-${step}-a`, `${symbol(B, r.input)} · ${t('steps.block.cap.down', { dff: a.length, dModel: o.length })}`,
      strip(a, 'a')),
    plot('o', `block-${step}-o`, [`${symbol(B, step)} · ${normSaid(o)}`, aloneSaid(B)].filter(Boolean).join(' · '),
      strip(o, 'MLP(x)')),
    plot('in', `block-${step}-in`, `${t('steps.block.cap.alone', { query: c.q })} · ${symbol(B, r.mlpIn)}`, strip(x, 'x')),
  ];
  return layout(c, strips, [normLine(T, step, c)]);
}

const BUILDERS = {
  stream: streamStep, norm: normStep, add: addStep, project: projectStep, act: actStep, product: productStep, down: downStep,
};

/**
 * One block step as a grid (the shape figures/steps.js stepSpec returns): the chosen token's vectors before
 * and after as strips, the step's own figures, the norm of every token before and after.
 * @param {object} T the StepData of a trace with `block` (figures/steps.js fromTrace)
 * @param {string} step one of BLOCK_STEPS that the block has
 * @param {{query: number, keys?: number|null, width?: number}} selection
 */
export function blockSpec(T, step, selection) {
  const width = selection.width ?? 1200;
  const q = Math.min(Math.max(0, selection.query), T.queryLabels.length - 1);
  const c = { q, width };
  const built = BUILDERS[recipe(T.block, step).kind](T, step, c);
  // A block step draws one token's vectors and every token's norm, no token × token matrix: nothing is windowed
  // (the window navigator hides), while the attention's windows are kept for the steps around.
  const { size, rows, keys } = windowsOf(T, { ...selection, width });
  const windows = { size, rows: { ...rows, windowed: false }, keys: { ...keys, windowed: false } };
  return { noteKey: null, noteValues: {}, overview: null, ...built, windows };
}

/**
 * The title and explanation of a block step in the page's language, true for the model's kind: the
 * server's caption_key (the norms' place, a gated MLP) names them, and the norm's, the activation's and the
 * model's numbers fill them. The step that is the layer's output says what reads it next.
 * @param {object} T StepData with `block` and `nLayers`
 * @param {{query: string}} values the query as the stage writes it
 */
export function blockText(T, step, values = {}) {
  const B = T.block;
  const key = B.steps.find((s) => s.name === step)?.caption_key ?? `steps.block.${step}`;
  const normName = B.norm === 'rms' ? 'RMSNorm' : 'LayerNorm'; // ui-text: not UI (the norms' names)
  const filled = {
    ...values,
    norm: normName,
    order: t(`steps.block.order.${B.order}`),
    formula: t(`steps.block.formula.${B.norm}`, { eps: B.eps.toExponential().replace('-', '−') }),
    act: activationName(B.activation),
    dModel: T.dModel,
    dff: B.d_ff,
    layer: T.layer,
    next: T.layer + 1,
    sub: step === 'add_1' || step === 'add_2' ? symbol(B, step) : '',
  };
  let body = t(`${key}.body`, filled);
  if (step === B.output_step) {
    const last = T.nLayers !== null && T.nLayers !== undefined && T.layer === T.nLayers - 1;
    const which = last ? (B.order === 'pre' ? 'lastPre' : 'last') : 'next';
    body += `${lang === 'zh' ? '' : ' '}${t(`steps.block.output.${which}`, filled)}`; // Chinese sentences need no space
  }
  return { label: t(`steps.block.label.${step}`), title: t(key, filled), body };
}

/** The short name of any step of the walk (the attention's are i18n/steps.js's). */
export const blockLabel = (step) => t(`steps.block.label.${step}`);

// ---- the block as one line (the /learn chapter) ------------------------------------------

const MLP_INSIDE = new Set(['mlp_gate', 'mlp_gate_act', 'mlp_hidden', 'mlp_act']);

/**
 * The block as the notes draw it, x → attention → + → norm → MLP → + → norm → y, in the model's order: its
 * steps with the attention's ten as one ('attention') and the MLP's inside left out (mlp_out is the MLP).
 */
export function flowSteps(block) {
  const walk = walkSteps(block);
  const flow = ['block_input'];
  for (const step of walk) {
    if (STEPS.includes(step)) {
      if (!flow.includes('attention')) flow.push('attention');
    } else if (!MLP_INSIDE.has(step) && step !== 'block_input') {
      flow.push(step);
    }
  }
  return flow;
}

/** ‖·‖ of token `q`'s vector at each point of flowSteps: [{step, norm}]. */
export function flowNorms(T, q) {
  return flowSteps(T.block).map((step) => ({ step, norm: norm2(arrayOf(T, step)[q]) }));
}
