// Titled matrix panels for the chapters on small worked examples (views-history.js, views-fast.js): each a
// figure with its heading and the Plotly heatmap of figures/matrix.js, every value written in its cell.
// A row of panels is laid out whole before any is drawn, so that no figure is sized for a row that then
// grows (a plot keeps the width it was drawn at).
import { matrixFigure } from '../figures/matrix.js';
import { t } from '../i18n/index.js';
import { renderFigure } from '../views/plot.js';
import { el } from './dom.js';

/** Labels p0, p1, … for n rows or columns. */
export const labels = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/**
 * Append one panel per spec to `parent`, then draw each. A spec: `id`, `titleKey` (its {placeholders} from
 * `values`), the matrix `z`, `kind` and `range` (figures/matrix.js), rows and columns named by `rows` /
 * `cols` (default q0… / k0…) and `colName`, and `highlights` (rectangles to outline).
 * @param {() => boolean} current false once a newer render began (then nothing more is drawn)
 */
export async function matrixPanels(parent, specs, current = () => true) {
  const plots = specs.map(({ id, titleKey, values = {} }) => {
    const plot = el('div', { id, class: 'learn-matrix', dataset: { matrix: id } });
    parent.append(el('figure', { class: 'learn-matrix-panel' }, [el('figcaption', { text: t(titleKey, values) }), plot]));
    return plot;
  });
  for (const [i, spec] of specs.entries()) {
    if (!current()) return;
    const { z, kind = 'signed', range = null, rows = null, cols = null, colName = null, highlights = [] } = spec;
    // eslint-disable-next-line no-await-in-loop
    await renderFigure(plots[i], matrixFigure({
      z, kind, range, rowLabels: rows ?? labels('q', z.length), rowName: null,
      colLabels: cols ?? labels('k', z[0].length), colName: colName ?? t('figure.key'), cellPx: 34, colPx: 44, colorbar: false,
      margin: { t: 6, r: 6 }, highlights,
    }), { modeBar: false });
  }
}
