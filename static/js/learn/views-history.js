// Where attention came from (chapter 1): Bahdanau's additive attention on the notes' worked example,
// POST /api/v1/toy with variant "additive" and the example's rows as queries (keys and values then default
// to them). The rows play the decoder's states s_t and the encoder's states h_j: e_tj = vᵀ tanh(W s_t +
// U h_j), α_t = softmax(e_t), c_t = Σ_j α_tj h_j, with the scorer's own W, U and v (the answer's
// `additive`: w_q, w_k, v). The caption is the chosen step's numbers and how far apart the steps'
// contexts are, against the one fixed vector a decoder without attention reads at every step.
import { getToy } from '../api.js';
import { t } from '../i18n/index.js';
import { Lru } from '../page.js';
import { matrixToParam } from '../toy/url.js';
import { el, fixed, said, toggles } from './dom.js';
import { argmax, rowSpread } from './measures.js';
import { labels, matrixPanels } from './panel.js';

const answers = new Lru(4);
const row = (xs) => xs.map((x) => fixed(x)).join(', ');
const range = (n) => Array.from({ length: n }, (_, i) => i);

/** The worked example's rows, then its additive scoring with those rows as queries, keys and values. */
async function additive() {
  const example = await answers.load('example', () => getToy({}));
  const rows = example.steps.input.q;
  const answer = await answers.load('additive', () => getToy({ variant: 'additive', queries: rows }));
  return { rows, answer };
}

export async function historyView(root, state, ctx) {
  const { rows, answer } = await additive();
  if (!ctx.current()) return;
  const head = Math.min(state.head, answer.n_heads - 1);
  const { steps } = answer;
  const scores = steps.scores[head]; // e, (L, S)
  const step = Math.min(state.step, scores.length - 1);
  const weights = steps.softmax[head]; // α, (L, S)
  const contexts = steps.weighted_sum[head]; // c, (L, d_keys): the values are the encoder states
  const { w_q: W, w_k: U, v } = answer.additive;
  const encoders = labels('h', scores[0].length);
  const states = labels('s', scores.length);
  const dims = (n) => labels('d', n);

  const scorer = el('div', { class: 'learn-matrices' });
  const attention = el('div', { class: 'learn-matrices' });
  root.replaceChildren(
    el('div', { class: 'learn-controls learn-controls-wrap' }, [
      toggles('learn.head', range(answer.n_heads).map((h) => [h, t('learn.c4.head', { head: h })]), head, (h) => ctx.navigate({ head: h }), { id: 'learn-history-heads' }),
      toggles('learn.history.step', states.map((name, i) => [i, name]), step, (i) => ctx.navigate({ step: i }), { id: 'learn-history-steps' }),
    ]),
    el('h2', { text: t('learn.history.scorerHeading') }),
    said('p', 'learn.history.scorerHint', { width: answer.d_keys, dims: v[head].length }, [], { class: 'hint' }),
    scorer,
    el('h2', { text: t('learn.history.attentionHeading') }),
    attention,
  );
  await matrixPanels(scorer, [
    { id: 'learn-additive-w', titleKey: 'learn.history.W', z: W[head], rows: dims(W[head].length), cols: dims(W[head][0].length), colName: 'd' },
    { id: 'learn-additive-u', titleKey: 'learn.history.U', z: U[head], rows: dims(U[head].length), cols: dims(U[head][0].length), colName: 'd' },
    { id: 'learn-additive-v', titleKey: 'learn.history.v', z: [v[head]], rows: ['v'], cols: dims(v[head].length), colName: 'd' },
  ], ctx.current);
  const chosen = [{ row0: step, row1: step }];
  await matrixPanels(attention, [
    { id: 'learn-additive-e', titleKey: 'learn.history.e', z: scores, rows: states, cols: encoders, highlights: chosen },
    { id: 'learn-additive-alpha', titleKey: 'learn.history.alpha', z: weights, kind: 'weights', range: 1, rows: states, cols: encoders, highlights: chosen },
    { id: 'learn-additive-c', titleKey: 'learn.history.c', z: contexts, rows: labels('c', contexts.length), cols: dims(contexts[0].length), colName: 'd', highlights: chosen },
  ], ctx.current);
  if (!ctx.current()) return;
  ctx.caption('learn.history.caption', {
    head, step, e: row(scores[step]), alpha: row(weights[step]), top: argmax(weights[step]), c: row(contexts[step]),
    steps: contexts.length, spread: fixed(rowSpread(contexts)),
  });
  ctx.links({ head, step, rows: matrixToParam(rows) });
}
