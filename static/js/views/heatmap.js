// The large heatmap of the selected head. The only Plotly caller on the explorer page.
// A click on a cell chooses its row's token as the query: the element then dispatches a
// `plotly-query` event whose detail is {query}.
import { downloadName, plotConfig } from './plot.js';

const FIRST_WORDS = 5;

/**
 * Draw (or update in place) a figure from figures/heatmap.js into gd; a downloaded PNG is named
 * after the view (layer, head and the first words of the text).
 */
export async function renderHeatmap(gd, figure, { text, layer, head }) {
  const words = text.trim().split(/\s+/).slice(0, FIRST_WORDS).join(' ');
  const config = plotConfig({ filename: downloadName('layer', layer, 'head', head, words) });
  await window.Plotly.react(gd, figure.data, figure.layout, config);
  if (!gd.dataset.clickBound) {
    gd.dataset.clickBound = 'true';
    gd.on('plotly_click', (event) => {
      const point = event.points && event.points[0];
      if (point) gd.dispatchEvent(new CustomEvent('plotly-query', { detail: { query: Number(point.y) } }));
    });
  }
}
