// The large heatmap of the selected head. The only Plotly caller on the explorer page.
import { plotConfig } from './plot.js';

const CONFIG = plotConfig({ filename: 'attnscope-head' });

/** Draw (or update in place) a figure from figures/heatmap.js into gd. */
export function renderHeatmap(gd, figure) {
  return window.Plotly.react(gd, figure.data, figure.layout, CONFIG);
}
