// Lays out a grid of figures and operators (a spec from figures/steps.js) and draws
// each figure with Plotly. Each plot lives in <div class="plot" id="plot-KEY"
// data-matrix="KEY">, so a test can read its numbers (gd.data[0].z).
import { downloadName, releaseFigure, renderFigure } from './plot.js';

/** Token text inside UI text: a span marked as data, not to be translated. */
export function dataText(text) {
  const span = document.createElement('span');
  span.translate = false;
  span.textContent = text;
  return span;
}

function operator(item) {
  const element = document.createElement('div');
  element.className = item.small ? 'grid-op grid-op-small' : 'grid-op';
  element.style.gridArea = item.area;
  element.textContent = item.text;
  if (item.id) element.id = item.id;
  return element;
}

function panel(item) {
  const figure = document.createElement('figure');
  figure.className = 'plot-panel';
  figure.style.gridArea = item.area;
  const caption = document.createElement('figcaption');
  const parts = Array.isArray(item.caption) ? item.caption : [item.caption];
  caption.replaceChildren(...parts.map((part) => (typeof part === 'string' ? part : dataText(part.data))));
  const plot = document.createElement('div');
  plot.className = 'plot';
  plot.id = `plot-${item.key}`;
  plot.dataset.matrix = item.key;
  if (item.figure.layout.width) plot.style.width = `${item.figure.layout.width}px`;
  plot.style.height = `${item.figure.layout.height}px`;
  figure.append(caption, plot);
  return { figure, plot };
}

/**
 * Replace the grid's content with the spec's items and draw the figures.
 * @param {HTMLElement} grid
 * @param {{columns: string, areas: string[], items: object[]}} spec
 * @param {Array<string|number>} [nameParts] what the figures show, for their file names
 * @param {{pause?: (() => Promise<boolean>)|null}} [options] pause: awaited before each figure (drawing in
 *   the background, a figure at a time); it resolves false to stop drawing. Without it every figure is
 *   drawn at once.
 * @returns {Promise<boolean>} resolves once every figure is drawn (true), or false when pause stopped it
 */
export async function drawGrid(grid, spec, nameParts = [], { pause = null } = {}) {
  releaseGrid(grid);
  grid.style.gridTemplateColumns = spec.columns;
  grid.style.gridTemplateAreas = spec.areas.map((row) => `"${row}"`).join(' ');
  const plots = [];
  const nodes = spec.items.map((item) => {
    if (item.type === 'op') return operator(item);
    const { figure, plot } = panel(item);
    plots.push([plot, item]);
    return figure;
  });
  grid.replaceChildren(...nodes);
  // In the document and laid out first, so that Plotly measures the real widths.
  const render = ([plot, item]) => renderFigure(plot, item.figure, { filename: downloadName(item.key, ...nameParts), modeBar: false });
  if (!pause) {
    await Promise.all(plots.map(render));
    return true;
  }
  for (const plot of plots) {
    if (!(await pause())) return false;
    await render(plot);
  }
  return true;
}

/** Free the plots of a grid that is no longer shown. */
export function releaseGrid(grid) {
  for (const gd of grid.querySelectorAll('.plot')) releaseFigure(gd);
}
