// "Who can see whom" on /sequence: the dependency path from j to i in a GRU, a convolution stack and
// self-attention (figures/sequence.js), the sequential steps each needs, and clicks on a figure that move
// the nearer of i and j to the clicked position.
import { tNodes } from '../../i18n/index.js';
import { attentionPathFigure, convPathFigure, pathSummary, rnnPathFigure } from '../../figures/sequence.js';
import { renderFigure } from '../plot.js';

const FIGURES = { rnn: rnnPathFigure, conv: convPathFigure, attention: attentionPathFigure };
const bound = new WeakSet(); // plots whose click handler is attached

function item(key, values, data = []) {
  const li = document.createElement('li');
  li.append(...tNodes(key, values, data));
  return li;
}

/** The sentences of the section, built from pathSummary (a node test recomputes them). */
export function pathWords(state) {
  const s = pathSummary(state);
  return {
    summary: s,
    counts: [
      ['sequence.count.rnn', { steps: s.rnn, n: state.n }],
      [state.dilated ? 'sequence.count.convDilated' : 'sequence.count.conv', { layers: s.conv, k: state.k, field: s.field }],
      ['sequence.count.attention', { steps: s.attention }],
    ],
    captions: {
      rnn: s.distance === 0 ? ['sequence.path.same', {}] : ['sequence.path.rnn', { low: s.low, high: s.high, steps: s.rnn }],
      conv: s.distance === 0 ? ['sequence.path.same', {}] : ['sequence.path.conv', { low: s.low, high: s.high, layers: s.conv, field: s.field }],
      attention: s.distance === 0 ? ['sequence.path.same', {}] : ['sequence.path.attention', { low: s.low, high: s.high }],
    },
  };
}

/**
 * Draw the three paths for `state` ({n, i, j, k, dilated}); `onPick(position)` is called with the position a
 * click on a figure chose.
 */
export async function drawPaths(els, state, onPick) {
  const words = pathWords(state);
  els.counts.replaceChildren(...words.counts.map(([key, values]) => item(key, values)));
  for (const kind of Object.keys(FIGURES)) {
    const [key, values] = words.captions[kind];
    els.captions[kind].replaceChildren(...tNodes(key, values));
    const gd = els.plots[kind];
    // eslint-disable-next-line no-await-in-loop
    await renderFigure(gd, FIGURES[kind](state), { filename: `attnscope-sequence-path-${kind}` });
    gd.dataset.drawn = 'true';
    if (!bound.has(gd)) {
      bound.add(gd);
      gd.on('plotly_click', (event) => {
        const point = event && event.points && event.points[0];
        if (point && Number.isFinite(point.x)) onPick(Math.round(point.x));
      });
    }
  }
}
