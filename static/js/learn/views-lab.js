// The chapters built on the notes' worked example (POST /api/v1/toy, /toy/backward): one head by hand
// with the √d_k saturation demo computed here, scoring and choosing variants, the causal mask and the
// backward pass (learning). Figures from figures/matrix.js.
import { getToy, getToyBackward } from '../api.js';
import { matrixFigure } from '../figures/matrix.js';
import { t } from '../i18n/index.js';
import { Lru } from '../page.js';
import { weightsCaption, weightsSummary } from '../toy/weights-summary.js';
import { renderFigure } from '../views/plot.js';
import { el, fixed, said, toggles } from './dom.js';
import { WIDTHS, saturation, saturationFigure } from './saturation.js';

const answers = new Lru(16);
const toy = (body) => answers.load(JSON.stringify(body), () => getToy(body));
const backward = (body) => answers.load(`backward ${JSON.stringify(body)}`, () => getToyBackward(body));

const queryLabels = (n) => Array.from({ length: n }, (_, i) => `q${i}`);
const keyLabels = (n) => Array.from({ length: n }, (_, j) => `k${j}`);

/** A titled matrix panel: its heading, and the plot drawn into it. */
async function matrixPanel(parent, { id, titleKey, values = {}, z, kind = 'signed', range = null, rows = null, cols = null }) {
  const plot = el('div', { id, class: 'learn-matrix', dataset: { matrix: id } });
  parent.append(el('figure', { class: 'learn-matrix-panel' }, [el('figcaption', { text: t(titleKey, values) }), plot]));
  await renderFigure(plot, matrixFigure({
    z, kind, range, rowLabels: rows ?? queryLabels(z.length), rowName: null,
    colLabels: cols ?? keyLabels(z[0].length), colName: t('figure.key'), cellPx: 34, colPx: 44, colorbar: false,
    margin: { t: 6, r: 6 },
  }), { modeBar: false });
}

let curve = null; // the saturation curve: computed once a page (same seed, same numbers)
export const SATURATION = Object.freeze({ keys: 8, trials: 100, seed: 1 });

/** Chapter 2: the worked example's head by hand, then why the scores are divided by √d_k. */
export async function byHandView(root, state, ctx) {
  const answer = await toy({});
  if (!ctx.current()) return;
  const head = Math.min(state.head, answer.n_heads - 1);
  const { steps } = answer;
  const matrices = el('div', { class: 'learn-matrices' });
  const hand = el('section', { class: 'learn-part', 'aria-labelledby': 'learn-hand-heading' }, [
    el('h2', { id: 'learn-hand-heading', text: t('learn.c2.handHeading') }),
    toggles('learn.head', [0, 1].map((h) => [h, t('learn.c4.head', { head: h })]), head, (h) => ctx.navigate({ head: h }), { id: 'learn-head-toggles' }),
    matrices,
    said('p', 'learn.c2.hand', {
      head, dHead: answer.d_head, divisor: fixed(Math.sqrt(answer.d_head), 4),
    }, [], { id: 'learn-hand-caption', class: 'learn-caption' }),
  ]);
  const width = WIDTHS.includes(state.d) ? state.d : 64;
  const plot = el('div', { id: 'learn-saturation', class: 'learn-plot' });
  const demo = el('section', { class: 'learn-part', 'aria-labelledby': 'learn-sat-heading' }, [
    el('h2', { id: 'learn-sat-heading', text: t('learn.c2.satHeading') }),
    toggles('learn.sat.width', WIDTHS.map((d) => [d, String(d)]), width, (d) => ctx.navigate({ d }), { id: 'learn-widths', class: 'learn-toggles learn-widths' }),
    plot,
  ]);
  root.replaceChildren(hand, demo);
  await matrixPanel(matrices, { id: 'learn-scores', titleKey: 'learn.c2.scores', z: steps.scores[head] });
  await matrixPanel(matrices, { id: 'learn-scaled', titleKey: 'learn.c2.scaled', values: { dHead: answer.d_head }, z: steps.scale[head] });
  await matrixPanel(matrices, { id: 'learn-weights', titleKey: 'learn.c2.weights', z: steps.softmax[head], kind: 'weights', range: 1 });
  await matrixPanel(matrices, {
    id: 'learn-output', titleKey: 'learn.c2.output', z: steps.weighted_sum[head], cols: steps.weighted_sum[head][0].map((_, j) => `d${j}`),
  });
  if (!ctx.current()) return;
  curve ??= saturation(WIDTHS, SATURATION);
  const point = curve.find((p) => p.d === width);
  await renderFigure(plot, saturationFigure(curve, width, { keys: SATURATION.keys }), { modeBar: false });
  ctx.caption('learn.c2.caption', {
    d: width, trials: SATURATION.trials, keys: SATURATION.keys, raw: fixed(point.rawMax), scaled: fixed(point.scaledMax),
    spread: fixed(point.rawSpread, 2), sqrt: fixed(Math.sqrt(width), 2),
  });
  ctx.links({ head });
}

export const VARIANTS = Object.freeze(['scaled_dot', 'dot', 'additive', 'hard', 'sample', 'gumbel']);
export const TEMPERATURES = Object.freeze([0.1, 0.5, 1, 2]);

/** Chapter 3: how scores are made (dot, scaled dot, additive) and how weights are chosen from them. */
export async function variantsView(root, state, ctx) {
  const variant = VARIANTS.includes(state.variant) ? state.variant : 'scaled_dot';
  const random = variant === 'sample' || variant === 'gumbel';
  const body = { variant };
  if (variant === 'gumbel') Object.assign(body, { temperature: state.temperature, straight_through: state.straight });
  if (random) body.seed = state.seed;
  const answer = await toy(body);
  if (!ctx.current()) return;
  const weights = answer.steps.softmax[0];
  const controls = [toggles('learn.c3.variant', VARIANTS.map((v) => [v, t(`learn.c3.v.${v}`)]), variant, (v) => ctx.navigate({ variant: v }), { id: 'learn-variants' })];
  if (variant === 'gumbel') {
    controls.push(toggles('learn.c3.temperature', TEMPERATURES.map((x) => [x, `τ = ${x}`]), state.temperature, (x) => ctx.navigate({ temperature: x }), { id: 'learn-temperatures' }));
    const box = el('input', { id: 'learn-straight', type: 'checkbox' });
    box.checked = state.straight;
    box.addEventListener('change', () => ctx.navigate({ straight: box.checked }));
    controls.push(el('label', { class: 'learn-check' }, [box, ' ', t('learn.c3.straight')]));
  }
  if (random) {
    controls.push(el('button', { id: 'learn-redraw', type: 'button', class: 'button-secondary', on: { click: () => ctx.navigate({ seed: state.seed + 1 }) } },
      [t('learn.c3.redraw', { seed: state.seed })]));
  }
  const matrices = el('div', { class: 'learn-matrices' });
  const about = said('p', `learn.c3.about.${variant}`, { seed: answer.seed, tau: answer.temperature }, [], { class: 'hint', id: 'learn-variant-about' });
  root.replaceChildren(el('div', { class: 'learn-controls learn-controls-wrap' }, controls), about, matrices);
  // s, the scores the about line names: scaled (1/√d_k, or 1 for dot and additive) but not divided by τ,
  // which the Gumbel-softmax applies to s + g itself. The scale step holds s / τ (answer.scale includes 1/τ).
  const beforeTemperature = answer.scale * answer.temperature;
  const scores = answer.steps.scores[0].map((row) => row.map((x) => x * beforeTemperature));
  await matrixPanel(matrices, { id: 'learn-variant-scores', titleKey: 'learn.c3.scores', z: scores });
  if (answer.soft) await matrixPanel(matrices, { id: 'learn-variant-soft', titleKey: 'learn.c3.soft', z: answer.soft[0], kind: 'weights', range: 1 });
  await matrixPanel(matrices, { id: 'learn-variant-weights', titleKey: 'learn.c3.weights', z: weights, kind: 'weights', range: 1 });
  if (!ctx.current()) return;
  const summary = weightsSummary(weights); // what the drawn cells read, at their two decimals
  ctx.caption(`learn.c3.caption.${weightsCaption(summary)}`, {
    variant: t(`learn.c3.v.${variant}`), rows: summary.rows, oneHot: summary.oneHot, exactOneHot: summary.exactOneHot,
    zeros: summary.zeros, cells: summary.cells, top: summary.topText,
  });
  ctx.links({ variant, temperature: state.temperature, straight: state.straight, seed: state.seed });
}

/** Chapter 5: the worked example's weights with and without the causal mask. */
export async function maskView(root, state, ctx) {
  const answer = await toy({ causal: state.causal });
  if (!ctx.current()) return;
  const weights = answer.steps.softmax[0];
  const matrices = el('div', { class: 'learn-matrices' });
  root.replaceChildren(
    toggles('learn.c5.mask', [[false, t('learn.c5.off')], [true, t('learn.c5.on')]], state.causal, (on) => ctx.navigate({ causal: on }), { id: 'learn-mask' }),
    matrices,
  );
  await matrixPanel(matrices, { id: 'learn-masked-scores', titleKey: 'learn.c5.scores', z: answer.steps.mask[0] });
  await matrixPanel(matrices, { id: 'learn-masked-weights', titleKey: 'learn.c2.weights', z: weights, kind: 'weights', range: 1 });
  if (!ctx.current()) return;
  let above = 0;
  let cells = 0;
  weights.forEach((row, i) => row.forEach((w, j) => {
    if (j > i) {
      cells += 1;
      above += w;
    }
  }));
  ctx.caption(state.causal ? 'learn.c5.caption.on' : 'learn.c5.caption.off', { cells, share: fixed(above / weights.length) });
  ctx.links({ causal: state.causal });
}

/** Chapter 8: the backward pass of the worked example's layer, checked against torch.autograd. */
export async function backwardView(root, state, ctx) {
  const answer = await backward({});
  if (!ctx.current()) return;
  const matrices = el('div', { class: 'learn-matrices' });
  root.replaceChildren(matrices);
  const dims = (m) => m[0].map((_, j) => `d${j}`);
  const rows = (m) => m.map((_, i) => `d${i}`);
  await matrixPanel(matrices, { id: 'learn-grad-softmax', titleKey: 'learn.c8.softmax', z: answer.gradients.softmax[0] });
  await matrixPanel(matrices, { id: 'learn-grad-wq', titleKey: 'learn.c8.wq', z: answer.gradients.w_q, rows: rows(answer.gradients.w_q), cols: dims(answer.gradients.w_q) });
  await matrixPanel(matrices, { id: 'learn-grad-wv', titleKey: 'learn.c8.wv', z: answer.gradients.w_v, rows: rows(answer.gradients.w_v), cols: dims(answer.gradients.w_v) });
  if (!ctx.current()) return;
  ctx.caption('learn.c8.caption', { count: answer.check.compared.length, diff: answer.check.max_abs_diff === 0 ? '0' : answer.check.max_abs_diff.toExponential(1) });
  ctx.links({});
}
