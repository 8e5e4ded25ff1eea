// The reach on /sequence: POST /api/v1/sequence/reach's gradient norms (log y) and the convolution stack's
// receptive field per layer, with a caption built from the answer's numbers (figures/sequence.js).
import { lang, tNodes } from '../../i18n/index.js';
import { ratio, reachFigure, reachSummary, receptiveFieldFigure } from '../../figures/sequence.js';
import { significant } from '../../figures/cost.js';
import { renderFigure } from '../plot.js';

const ROUTE = 'POST /api/v1/sequence/reach';
const g = (x) => significant(x, 3);

/** The caption's keys and values from the answer (a node test recomputes them). */
export function reachWords(answer) {
  const s = reachSummary(answer);
  const parts = [];
  if (s.rnnFades) parts.push(['sequence.reach.fades', { ratio: ratio(s.rnnRatio), near: s.near, farPos: s.far }]);
  else parts.push(['sequence.reach.notFades', { far: g(s.rnnFar), near: s.near, nearValue: g(s.rnnNear), farPos: s.far }]);
  if (s.rnnZeros > 0) parts.push(['sequence.reach.underflow', { farPos: s.far }]);
  parts.push(['sequence.reach.attention', { min: g(s.attentionMin), max: g(s.attentionMax) }]);
  if (s.zeros > 0) parts.push(['sequence.reach.zeros', { zeros: s.zeros, field: s.fieldFull }]);
  else parts.push(['sequence.reach.covers', { field: s.fieldFull, n: s.n }]);
  return parts;
}

export function reachHint(state) {
  return ['sequence.reach.hint', { route: ROUTE, n: state.n, d: state.d, layers: state.layers, k: state.k }, ['route']];
}

export async function drawReach(els, answer) {
  els.caption.replaceChildren();
  reachWords(answer).forEach(([key, values], index) => {
    if (index && lang !== 'zh') els.caption.append(' '); // Chinese sentences follow one another without a space
    els.caption.append(...tNodes(key, values));
  });
  await renderFigure(els.reach, reachFigure(answer), { filename: 'attnscope-sequence-reach' });
  await renderFigure(els.field, receptiveFieldFigure(answer), { filename: 'attnscope-sequence-field' });
  els.section.dataset.drawn = 'true';
}
