// Hard attention that learns (the glimpse chapter): one decoding step's attention over the 9 cells of a 3 × 3
// canvas, three ways: soft attention's weights p = softmax(scores), a Gumbel-softmax relaxed sample
// y = softmax((log p + g)/τ) at the chosen temperature τ for one fixed draw of Gumbel noise g, and the one-hot
// choice that a hard glimpse (and straight-through's forward pass) takes, argmax(log p + g): a sample from p by the
// Gumbel-max trick. Worked numbers, not a trained model.
import { FONT, HIGHLIGHT, TEXT_COLOUR } from '../figures/axes.js';
import { t } from '../i18n/index.js';
import { renderFigure } from '../views/plot.js';
import { el, fixed, toggles } from './dom.js';

export const TAUS = Object.freeze([0.1, 0.5, 1, 2, 5]);
// The scores vᵀtanh(W s + U h_i) of one step over the 9 cells, and one draw of Gumbel(0, 1) noise −log(−log u).
export const SCORES = Object.freeze([0.2, 1.6, -0.4, 0.9, 0.1, -1.2, 2.1, 0.3, -0.6]);
export const NOISE = Object.freeze([0.35, -0.52, 1.21, 0.08, -0.91, 0.44, -0.27, 1.63, 0.12]);

const softmax = (xs) => {
  const top = Math.max(...xs);
  const e = xs.map((x) => Math.exp(x - top));
  const sum = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / sum);
};
const argmax = (xs) => xs.reduce((best, x, i) => (x > xs[best] ? i : best), 0);

/** The step's three weightings at temperature tau (a node test recomputes the caption from these). */
export function glimpseWeights(tau) {
  const p = softmax(SCORES);
  const noisy = p.map((x, i) => Math.log(x) + NOISE[i]);
  const relaxed = softmax(noisy.map((x) => x / tau));
  const chosen = argmax(noisy);
  return { p, relaxed, chosen, hard: p.map((_, i) => (i === chosen ? 1 : 0)), likeliest: argmax(p) };
}

/** The caption's values at temperature tau. */
export function glimpseWords(tau) {
  const { p, relaxed, chosen, likeliest } = glimpseWeights(tau);
  return {
    tau: String(tau), cell: chosen + 1, relaxed: fixed(relaxed[chosen], 2), p: fixed(p[chosen], 2),
    likeliest: likeliest + 1, top: fixed(p[likeliest], 2),
  };
}

function weightsFigure(tau) {
  const { p, relaxed, hard } = glimpseWeights(tau);
  const x = p.map((_, i) => t('learn.glimpse.cell', { n: i + 1 }));
  const bar = (key, y, color) => ({
    type: 'bar', name: t(`learn.glimpse.${key}`), x, y, marker: { color },
    hovertemplate: `%{x}: %{y:.3f}<extra>%{fullData.name}</extra>`,
  });
  return {
    data: [bar('soft', p, '#2457c5'), bar('relaxed', relaxed, '#2f9e44'), bar('hard', hard, HIGHLIGHT)],
    layout: {
      font: { family: FONT, size: 12, color: TEXT_COLOUR }, paper_bgcolor: '#ffffff', plot_bgcolor: '#ffffff',
      height: 300, barmode: 'group', margin: { t: 30, r: 12, b: 44, l: 48 },
      legend: { orientation: 'h', x: 1, xanchor: 'right', y: 1.02, yanchor: 'bottom' },
      yaxis: { title: { text: t('learn.glimpse.axis'), standoff: 4 }, range: [0, 1.05], gridcolor: '#eef0f3' },
    },
  };
}

export async function glimpseView(root, state, ctx) {
  const tau = TAUS.includes(state.tau) ? state.tau : 1;
  const plot = el('div', { id: 'learn-glimpse-weights', class: 'learn-plot' });
  root.replaceChildren(
    toggles('learn.glimpse.tau', TAUS.map((v) => [v, String(v)]), tau, (v) => ctx.navigate({ tau: v }), { id: 'learn-taus' }),
    el('h2', { text: t('learn.glimpse.heading', { tau }) }),
    plot,
  );
  await renderFigure(plot, weightsFigure(tau), { modeBar: false });
  if (!ctx.current()) return;
  ctx.caption('learn.glimpse.caption', glimpseWords(tau));
  ctx.links({ tau });
}
