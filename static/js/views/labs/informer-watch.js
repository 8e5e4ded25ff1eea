// The Informer lab's window view (/informer): a test window's forecast by both networks over its history and truth
// (POST /api/v1/labs/informer/watch on each job), what each forecast's error is on that window, and the chosen
// network's attention of one head in every layer, one heatmap per layer (each half the length of the one before),
// the active queries' rows outlined.
import { watchInformer } from '../../api.js';
import { forecastFigure, KINDS, layerFigure, layerSize, mse } from '../../figures/informer.js';
import { t } from '../../i18n/index.js';
import { releaseFigure, renderFigure } from '../plot.js';

/** The mean squared difference of two equally long lists. */
export const windowMse = (a, b) => a.reduce((sum, x, i) => sum + (x - b[i]) ** 2, 0) / a.length;

/** Draws the window view into `els` for the jobs `jobs` ({probsparse, full}); returns the answers. */
export async function drawWindow(els, jobs, { index, net, head, unit, locale }) {
  const answers = Object.fromEntries(await Promise.all(KINDS.map(async (kind) => [kind, jobs[kind] ? await watchInformer({ job: jobs[kind], index }) : null])));
  const any = answers.probsparse ?? answers.full;
  await renderFigure(els.forecast, forecastFigure(answers, { unit }), { filename: `attnscope-informer-window-${index}` });
  const errors = Object.fromEntries(KINDS.filter((kind) => answers[kind]).map((kind) => [kind, mse(windowMse(answers[kind].forecast, any.truth), locale)]));
  els.says.textContent = t('informer.window.says', {
    index, from: any.times[0].toFixed(2), to: any.times[any.times.length - 1].toFixed(2),
    probsparse: errors.probsparse ?? '–', full: errors.full ?? '–', naive: mse(windowMse(any.naive, any.truth), locale), step: any.step,
  });
  els.forecast.dataset.index = String(index);
  await drawLayers(els, answers[net] ?? any, head);
  return answers;
}

/** One heatmap per layer of `answer` for `head`, labelled with its length; ProbSparse's active rows outlined. */
export async function drawLayers(els, answer, head) {
  for (const plot of els.layers.querySelectorAll('.js-plotly-plot')) releaseFigure(plot);
  els.layers.replaceChildren();
  const probsparse = answer.attention === 'probsparse';
  els.hint.textContent = t(probsparse ? 'informer.attention.hintSparse' : 'informer.attention.hintFull', { head });
  const max = Math.min(420, Math.max(200, els.layers.clientWidth || 420));
  const window = answer.layers[0].length;
  for (const [n, layer] of answer.layers.entries()) {
    const plot = document.createElement('div');
    plot.id = `plot-layer-${n}`;
    plot.dataset.length = String(layer.length);
    plot.dataset.active = layer.active ? layer.active[head].join(',') : '';
    const caption = document.createElement('figcaption');
    caption.textContent = layer.active
      ? t('informer.attention.layerSparse', { layer: n, length: layer.length, u: layer.active[head].length })
      : t('informer.attention.layer', { layer: n, length: layer.length });
    const figure = document.createElement('figure');
    figure.className = 'informer-layer';
    figure.append(caption, plot);
    els.layers.append(figure);
    // eslint-disable-next-line no-await-in-loop
    await renderFigure(plot, layerFigure(layer, head, { size: layerSize(layer.length, window, max) }), { modeBar: false });
  }
  els.layers.dataset.attention = answer.attention;
  els.layers.dataset.head = String(head);
}
