// RNN, convolution or attention (the last chapter): the dependency path between two positions of a 64-position
// sequence in a GRU, a convolution stack of kernel 3 (dilated: 2^l in layer l) and self-attention, for a chosen
// distance, drawn by the /sequence page's figures (figures/sequence.js) from the formulas alone.
import { attentionPathFigure, convLayers, convPathFigure, pathSummary, rnnPathFigure } from '../figures/sequence.js';
import { t } from '../i18n/index.js';
import { renderFigure } from '../views/plot.js';
import { el, toggles } from './dom.js';

export const DISTANCES = Object.freeze([3, 15, 63]);
export const LEARN_SEQUENCE = Object.freeze({ n: 64, i: 63, k: 3 }); // the chapter's sequence, last position i

/** The chapter's state for a distance: the /sequence state it links to. */
export const sequenceState = (distance) => ({ ...LEARN_SEQUENCE, j: LEARN_SEQUENCE.i - distance, dilated: true });

/** The caption's numbers for a distance (a node test recomputes them). */
export function sequenceWords(distance) {
  const state = sequenceState(distance);
  const s = pathSummary(state);
  return {
    i: state.i, j: state.j, distance: s.distance, rnn: s.rnn, conv: convLayers(state.i, state.j, state.k, false),
    dilated: s.conv, attention: s.attention,
  };
}

export async function sequenceView(root, state, ctx) {
  const distance = DISTANCES.includes(state.distance) ? state.distance : 15;
  const view = sequenceState(distance);
  const plots = ['rnn', 'conv', 'attention'].map((kind) => el('div', { id: `learn-seq-${kind}`, class: 'learn-plot' }));
  root.replaceChildren(
    toggles('learn.sequence.distance', DISTANCES.map((d) => [d, String(d)]), distance, (d) => ctx.navigate({ distance: d }), { id: 'learn-distances' }),
    el('h2', { text: t('learn.sequence.steps', { i: view.i, j: view.j }) }),
    el('h3', { text: t('learn.sequence.rnnHeading') }), plots[0],
    el('h3', { text: t('learn.sequence.convHeading') }), plots[1],
    el('h3', { text: t('learn.sequence.attentionHeading') }), plots[2],
  );
  const figures = [rnnPathFigure(view), convPathFigure(view), attentionPathFigure(view)];
  for (const [index, figure] of figures.entries()) {
    if (!ctx.current()) return;
    // eslint-disable-next-line no-await-in-loop
    await renderFigure(plots[index], figure, { modeBar: false });
  }
  if (!ctx.current()) return;
  ctx.caption('learn.sequence.caption', sequenceWords(distance));
  ctx.links({ distance });
}
