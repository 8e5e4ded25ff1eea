// The head view's elements (views/head-view.js): the head toggles, the legend and status line, the two
// token columns and the two canvases between them, and their words in the page's language. Token text is
// set as text, never parsed.
import { tokenLabel } from '../figures/axes.js';
import { t, tNodes } from '../i18n/index.js';
import { CUTOFF, LIMITS, describeState } from './head-view-layout.js';

function element(tag, className, attributes = {}) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

/** Fill `container` with the view's elements; returns them by name. */
export function buildHeadView(container) {
  container.classList.add('head-view');
  const els = {
    toolbar: element('div', 'head-view-heads', { role: 'group' }),
    allButton: element('button', 'head-view-all', { type: 'button' }),
    noneButton: element('button', 'head-view-none', { type: 'button' }),
    toggles: element('div', 'head-view-toggles'),
    lines: element('label', 'head-view-lines'),
    limitWords: element('span'),
    limit: element('select', 'head-view-limit'),
    legend: element('p', 'head-view-legend hint'),
    status: element('p', 'head-view-status'),
    scroller: element('div', 'head-view-scroll'),
    body: element('div', 'head-view-body'),
    queries: element('div', 'head-view-tokens head-view-queries', { role: 'group' }),
    keys: element('div', 'head-view-tokens head-view-keys', { role: 'group' }),
    lanes: element('div', 'head-view-lanes'),
    stage: element('div', 'head-view-stage'),
    base: element('canvas', 'head-view-base', { role: 'img' }),
    overlay: element('canvas', 'head-view-overlay', { 'aria-hidden': 'true' }),
  };
  els.toolbar.append(els.allButton, els.noneButton, els.toggles);
  els.limit.append(...LIMITS.map((limit) => element('option', '', { value: limit === Infinity ? 'all' : String(limit) })));
  els.lines.append(els.limitWords, els.limit);
  els.stage.append(els.base, els.overlay);
  els.lanes.append(els.stage);
  els.body.append(els.queries, els.lanes, els.keys);
  els.scroller.append(els.body);
  container.replaceChildren(els.toolbar, els.lines, els.legend, els.status, els.scroller);
  return els;
}

/** The view's own words, in the page's language; `limit` the lines per token chosen. */
export function writeWords(els, limit) {
  els.toolbar.setAttribute('aria-label', t('headView.heads'));
  els.allButton.textContent = t('headView.all');
  els.noneButton.textContent = t('headView.none');
  els.legend.textContent = t('headView.legend', { cutoff: String(CUTOFF) });
  els.limitWords.textContent = t('headView.limit');
  for (const option of els.limit.options) {
    const value = option.value === 'all' ? Infinity : Number(option.value);
    option.textContent = value === Infinity ? t('headView.limitAll', { cutoff: String(CUTOFF) })
      : t(value === 1 ? 'headView.limitOne' : 'headView.limitSome', { limit: value });
  }
  els.limit.value = limit === Infinity ? 'all' : String(limit);
  els.queries.setAttribute('aria-label', t('headView.queries'));
  els.keys.setAttribute('aria-label', t('headView.keys'));
}

/** A token of the query or key column; the first of each is the one Tab reaches. */
export function tokenButton(token, index, side) {
  const button = element('button', `head-view-token${token.special ? ' is-special' : ''}${token.segment === 1 ? ' is-segment-1' : ''}`, {
    type: 'button', 'data-index': String(index), 'data-side': side,
  });
  button.translate = false;
  button.textContent = tokenLabel(token);
  button.setAttribute('aria-label', t(side === 'query' ? 'headView.query' : 'headView.key', { index, token: tokenLabel(token) }));
  button.setAttribute('aria-pressed', 'false');
  button.tabIndex = index === 0 ? 0 : -1;
  return button;
}

/** The toggle of one head: a swatch of its colour and "H<head>". */
export function headToggle(head, colour, pressed) {
  const button = element('button', 'head-view-toggle', {
    type: 'button', 'data-head': String(head), 'aria-pressed': String(pressed),
  });
  button.setAttribute('aria-label', t('headView.toggle', { head }));
  button.title = t('headView.toggle', { head });
  const swatch = element('span', 'head-view-swatch', { 'aria-hidden': 'true' });
  swatch.style.backgroundColor = colour;
  button.append(swatch, `H${head}`);
  return button;
}

/** The toggles of the query heads that share key-value head `kv`, side by side after a label "KV kv". */
export function kvToggleGroup(kv, toggles) {
  const group = element('span', 'head-view-kv', { role: 'group', 'data-kv': String(kv) });
  const heads = toggles.map((button) => button.dataset.head).join(', ');
  group.setAttribute('aria-label', t('overview.kvGroupTitle', { kv, heads }));
  const name = element('span', 'head-view-kv-label');
  name.textContent = t('overview.kvGroup', { kv });
  name.title = t('overview.kvGroupTitle', { kv, heads });
  group.append(name, ...toggles);
  return group;
}

/**
 * Say what is shown: the container's data-* attributes (head-view-layout.js describeState), the status
 * line and the canvas's label.
 */
export function writeStatus(container, els, { chosen, visible, count, drawing, tokens }) {
  const { cut, ...data } = describeState(chosen, visible, count, drawing);
  Object.assign(container.dataset, data);
  const every = chosen.limit === undefined || chosen.limit === Infinity;
  const allKey = every ? 'headView.showingAll' : chosen.limit === 1 ? 'headView.showingTopOne' : 'headView.showingTop';
  const what = chosen.mode === 'all' ? [t(allKey, { lines: count, heads: visible.size, limit: chosen.limit })]
    : tNodes(chosen.mode === 'query' ? 'headView.showingQuery' : 'headView.showingKey', {
      lines: count, heads: visible.size, index: chosen.index, token: tokenLabel(tokens[chosen.index]),
    }, ['token']);
  const note = cut
    ? t('headView.cut', { drawn: drawing.entries.length, total: drawing.inView, weight: drawing.from.toFixed(2) }) : '';
  els.status.replaceChildren(...what, ...(note ? [' ', note] : []));
  els.base.setAttribute('aria-label', els.status.textContent);
}
