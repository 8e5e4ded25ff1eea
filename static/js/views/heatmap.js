// The large heatmap of the explorer. The only Plotly caller on the explorer page.
// A click on a cell chooses its row's token as the query: the element then dispatches a
// `plotly-query` event whose detail is {query}. A click on a tick label focuses that token:
// a `plotly-focus` event whose detail is {index}. Zooming in labels every token in view
// (as many as fit), zooming out thins the labels again; while some token goes unlabelled, each label
// says its token's position ("37 animal": figures/heatmap.js axisTicks).
import { axisTicks } from '../figures/heatmap.js';
import { downloadName, plotConfig } from './plot.js';

const FIRST_WORDS = 5;

/** Relabel both axes for the ranges now in view: every token that fits gets its label (and position). */
function relabel(gd) {
  const full = gd._fullLayout;
  const labels = gd.__labels || [];
  const keep = gd.__keep || [];
  if (!full || !labels.length) return;
  const update = {};
  for (const name of ['xaxis', 'yaxis']) {
    const axis = full[name];
    const [a, b] = axis.range;
    const { tickvals, ticktext } = axisTicks(labels, Math.min(a, b), Math.max(a, b), axis._length, keep);
    const old = gd.layout[name].ticktext || [];
    if (old.length === ticktext.length && old.every((v, i) => v === ticktext[i])) continue;
    update[`${name}.tickvals`] = tickvals;
    update[`${name}.ticktext`] = ticktext;
  }
  if (Object.keys(update).length) window.Plotly.relayout(gd, update);
}

/** Tick labels are buttons of a kind: a click on one focuses its token. */
function bindTickLabels(gd) {
  for (const text of gd.querySelectorAll('.xtick text, .ytick text')) { // ui-text: not UI (a CSS selector)
    if (text.dataset.bound) continue;
    text.dataset.bound = 'true';
    text.classList.add('tick-focus');
    text.addEventListener('click', (event) => {
      const tick = text.__data__ || text.parentNode.__data__;
      const index = tick && Number.isFinite(tick.x) ? Math.round(tick.x) : null;
      if (index === null) return;
      event.stopPropagation();
      gd.dispatchEvent(new CustomEvent('plotly-focus', { detail: { index } }));
    });
  }
}

/**
 * Draw (or update in place) a figure from figures/heatmap.js into gd; a downloaded PNG is named
 * after the view (layer, head and the first words of the text).
 * @param {{text: string, layer: number, head: number, keep?: number[]}} view keep: tokens always labelled
 */
export async function renderHeatmap(gd, figure, { text, layer, head, keep = [] }) {
  const words = text.trim().split(/\s+/).slice(0, FIRST_WORDS).join(' ');
  const config = plotConfig({ filename: downloadName('layer', layer, 'head', head, words) });
  gd.__labels = figure.labels;
  gd.__keep = keep;
  await window.Plotly.react(gd, figure.data, figure.layout, config);
  bindTickLabels(gd);
  if (!gd.dataset.clickBound) {
    gd.dataset.clickBound = 'true';
    gd.on('plotly_click', (event) => {
      const point = event.points && event.points[0];
      if (point) gd.dispatchEvent(new CustomEvent('plotly-query', { detail: { query: Number(point.y) } }));
    });
    gd.on('plotly_relayout', (change) => {
      if (Object.keys(change).some((key) => key.endsWith('.tickvals'))) return; // our own relabelling
      relabel(gd);
    });
    gd.on('plotly_afterplot', () => bindTickLabels(gd));
  }
}
