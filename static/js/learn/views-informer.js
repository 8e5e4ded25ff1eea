// Forecasting with sparse attention (the Informer chapter): for a window of L values through the Informer lab's two
// attention layers (a distilling layer halving the length between them), how many attention scores each head
// computes with full attention (n² in a layer of length n) and with ProbSparse (n·U sampled scores to measure M,
// then the u active rows' n scores each; U = u = min(c·⌈ln n⌉, n)), from the formulas alone.
import { FONT, HIGHLIGHT, TEXT_COLOUR } from '../figures/axes.js';
import { exact } from '../figures/cost.js';
import { lang, t } from '../i18n/index.js';
import { renderFigure } from '../views/plot.js';
import { el, toggles } from './dom.js';

export const WINDOWS = Object.freeze([96, 384, 1536, 4096]);
export const FACTOR = 5; // the lab's default c
export const LAYERS = 2; // the lab's default attention layers
export const LAB_LONGEST = 1024; // the lab's longest window (model/lab/informer.py MAX_WINDOW)

/** min(c·⌈ln n⌉, n): the active queries of a layer of length n (and the keys each query samples). */
export const activeCount = (n, c = FACTOR) => Math.min(c * Math.ceil(Math.log(n)), n);

/** Each layer's length and score counts for a window L (a node test recomputes the caption from these). */
export function informerLayers(window, layers = LAYERS, c = FACTOR) {
  const out = [];
  let n = window;
  for (let l = 0; l < layers; l += 1) {
    const u = activeCount(n, c);
    out.push({ layer: l, length: n, u, full: n * n, sparse: n * u + u * n });
    n = Math.ceil(n / 2);
  }
  return out;
}

/** The caption's values for a window L (counts written out in the page's locale). */
export function informerWords(window, locale = lang === 'zh' ? 'zh-CN' : 'en') {
  const layers = informerLayers(window);
  const full = layers.reduce((sum, l) => sum + l.full, 0);
  const sparse = layers.reduce((sum, l) => sum + l.sparse, 0);
  return {
    window: exact(window, locale), c: FACTOR, u: layers[0].u, half: exact(layers[1].length, locale), u2: layers[1].u,
    full: exact(full, locale), sparse: exact(sparse, locale), percent: ((100 * sparse) / full).toFixed(1),
  };
}

function scoresFigure(window) {
  const layers = informerLayers(window);
  const x = layers.map((l) => t('learn.informer.layerLabel', { layer: l.layer, length: l.length }));
  const bar = (kind, values, color) => ({
    type: 'bar', name: t(`learn.informer.${kind}`), x, y: values, marker: { color },
    hovertemplate: `%{x}: %{y:,}<extra>%{fullData.name}</extra>`,
  });
  return {
    data: [bar('full', layers.map((l) => l.full), HIGHLIGHT), bar('sparse', layers.map((l) => l.sparse), '#2457c5')],
    layout: {
      font: { family: FONT, size: 12, color: TEXT_COLOUR }, paper_bgcolor: '#ffffff', plot_bgcolor: '#ffffff',
      height: 300, barmode: 'group', margin: { t: 30, r: 12, b: 44, l: 64 },
      legend: { orientation: 'h', x: 1, xanchor: 'right', y: 1.02, yanchor: 'bottom' },
      yaxis: { title: { text: t('learn.informer.axis'), standoff: 4 }, rangemode: 'tozero', tickformat: '~s', gridcolor: '#eef0f3' },
    },
  };
}

export async function informerView(root, state, ctx) {
  const window = WINDOWS.includes(state.window) ? state.window : WINDOWS[0];
  const plot = el('div', { id: 'learn-informer-scores', class: 'learn-plot' });
  root.replaceChildren(
    toggles('learn.informer.window', WINDOWS.map((w) => [w, String(w)]), window, (w) => ctx.navigate({ window: w }), { id: 'learn-windows' }),
    el('h2', { text: t('learn.informer.scoresHeading', { window }) }),
    plot,
  );
  await renderFigure(plot, scoresFigure(window), { modeBar: false });
  if (!ctx.current()) return;
  ctx.caption('learn.informer.caption', informerWords(window));
  ctx.links({ window });
}
