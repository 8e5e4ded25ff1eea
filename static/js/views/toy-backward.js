// The toy's backward pass under its walkthrough, opened by the Backward button (kept in the URL):
// every gradient of POST /api/v1/toy/backward as a heatmap, step by step in reverse order, each
// beside the forward value it belongs to, for the chosen head; the upstream gradient, the check
// against torch.autograd, and what the variant does to the gradient of the scores.
// Figures: data-matrix="grad-<name>" (the gradient) and "fwd-<name>" (the forward value); steps:
// data-back-step="<id>" in the order drawn.
import { backwardSteps, forwardFigure, formatDiff, gradientFigure } from '../figures/backward.js';
import { t } from '../i18n/index.js';
import { releaseFigure, renderFigure } from './plot.js';

/** Ones on the output row of `query`, zeros elsewhere (L × d_model, from the request's queries). */
export function rowUpstream(body, query) {
  const rows = body.queries.length;
  const width = body.queries[0].length;
  const q = Math.min(query, rows - 1);
  return Array.from({ length: rows }, (_, i) => Array.from({ length: width }, () => (i === q ? 1 : 0)));
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** "notation" shown as it is in every language. */
function notation(text, tag = 'code', className = 'backward-symbol') {
  const node = element(tag, className === 'backward-symbol' ? className : `backward-symbol ${className}`, text);
  node.setAttribute('translate', 'no');
  return node;
}

function figureBox(kind, p) {
  const box = element('figure', `backward-figure is-${kind}`);
  const caption = element('figcaption');
  caption.append(t(kind === 'gradient' ? 'toy.back.gradientOf' : 'toy.back.forwardOf'), ' ',
    notation(kind === 'gradient' ? p.symbol : p.forwardSymbol));
  const plot = element('div', 'backward-plot');
  plot.dataset.matrix = `${kind === 'gradient' ? 'grad' : 'fwd'}-${p.name}`;
  plot.dataset.grad = p.name;
  box.append(caption, plot);
  return { box, plot, figure: kind === 'gradient' ? gradientFigure(p) : forwardFigure(p) };
}

/** What a step's sentence says, given the answer (the scores' step depends on the variant). */
function sentence(id, answer) {
  const f = answer.forward;
  if (id === 'scores') {
    const active = f.probsparse ? { u: f.probsparse.active[0].length, L: f.probsparse.measure[0].length } : {};
    return t(`toy.back.say.scores.${answer.flow}`, { scale: f.scale.toFixed(4), ...active });
  }
  if (['q', 'k', 'weights'].includes(id) && f.variant === 'additive') return t(`toy.back.say.${id}.additive`);
  if (['q', 'k'].includes(id) && f.variant === 'linear') return t(`toy.back.say.${id}.linear`);
  if (id === 'inputs' && answer.gradients.input) return `${t('toy.back.say.inputs')} ${t('toy.back.selfAttention')}`;
  return t(`toy.back.say.${id}`);
}

/**
 * @param {HTMLElement} root the backward panel (templates/toy.html)
 * @param {{load: (body: object) => Promise<object>}} options load: the backward answer to a request
 */
export function createBackwardView(root, { load }) {
  const list = root.querySelector('#backward-steps');
  const upstream = root.querySelector('#backward-upstream');
  const check = root.querySelector('#backward-check');
  const note = root.querySelector('#backward-note');

  function clear() {
    for (const plot of list.querySelectorAll('.backward-plot')) releaseFigure(plot);
    list.replaceChildren();
  }

  function say(answer, { mode, query }) {
    const words = answer.upstream_default ? t('toy.back.upstreamOnes')
      : mode === 'row' ? t('toy.back.upstreamRow', { query: `q${query}` }) : t('toy.back.upstreamGiven');
    upstream.replaceChildren(words, ' ', notation('dL/dY'));
    const { max_abs_diff: diff, max_rel_diff: rel, bound, compared } = answer.check;
    const ok = rel <= bound; // what float64 rounding can explain (model/lab/toy_backward.py compare)
    check.textContent = `${ok ? '✓' : '✗'} ${t(ok ? 'toy.back.check' : 'toy.back.checkFailed', {
      diff: formatDiff(diff), count: compared.length,
    })}`;
    check.classList.toggle('is-same', ok);
    check.dataset.maxAbsDiff = String(diff);
    const lines = [];
    if (answer.flow !== 'softmax') lines.push(t(`toy.back.flow.${answer.flow}`)); // none, straight_through, linear, probsparse
    if (answer.forward.positions === 'rope') lines.push(t('toy.back.rope'));
    if (answer.forward.positions === 'sinusoidal') lines.push(t('toy.back.sinusoidal'));
    note.textContent = lines.join(' ');
    note.hidden = lines.length === 0;
    note.dataset.flow = answer.flow;
  }

  /**
   * Draw the backward pass of `body` for `head`. The upstream gradient: all ones (`mode` "ones"),
   * or ones on the row of `query` and zeros elsewhere (`mode` "row": the gradient of that query's
   * output alone).
   */
  async function draw(body, head, { mode = 'ones', query = 0 } = {}) {
    root.setAttribute('aria-busy', 'true');
    try {
      return await drawAnswer(await load(mode === 'row' ? { ...body, upstream: rowUpstream(body, query) } : body),
        head, { mode, query });
    } finally {
      root.setAttribute('aria-busy', 'false');
    }
  }

  async function drawAnswer(answer, head, { mode, query }) {
    say(answer, { mode, query });
    clear();
    const drawing = [];
    backwardSteps(answer, head).forEach((step, index) => {
      const item = element('li', 'backward-step');
      item.dataset.backStep = step.id;
      item.dataset.order = String(index);
      const top = element('div', 'backward-step-head');
      top.append(element('span', 'backward-number', String(index + 1)), element('strong', '', t(`toy.back.step.${step.id}`)),
        notation(step.formula, 'code', 'backward-formula'));
      item.append(top, element('p', 'backward-say', sentence(step.id, answer)));
      const pairs = element('div', step.pairs.some((p) => p.forward) ? 'backward-pairs' : 'backward-pairs is-compact');
      for (const p of step.pairs) {
        const row = element('div', 'backward-pair');
        row.dataset.pair = p.name;
        const boxes = [...(p.forward ? [figureBox('forward', p)] : []), figureBox('gradient', p)];
        for (const { box } of boxes) row.append(box);
        pairs.append(row);
        drawing.push(boxes);
      }
      item.append(pairs);
      list.append(item);
    });
    await Promise.all(drawing.flat().map(({ plot, figure }) => renderFigure(plot, figure, { modeBar: false })));
    return answer;
  }

  return { draw, clear };
}
