// The /corpus page's text cards: each text's tokens (as text, never HTML) with the head's strongest pairs
// drawn on them (query tokens outlined, key tokens filled, an arc from each query to its key, heavier pairs
// wider and darker), the pairs listed with their weights, and the whole snippet a link to the explorer.
import { t, tNodes } from '../i18n/index.js';
import { arcPath, arcStroke, formatValue, snippetTokens } from '../figures/corpus.js';

const SVG = 'http://www.w3.org/2000/svg'; // ui-text: not UI (the SVG namespace)

function element(tag, className, text = null) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== null) node.textContent = text;
  return node;
}

/** The top centre of a token's box in the snippet's coordinates. */
function anchor(token, box) {
  const rect = token.getBoundingClientRect();
  return { x: rect.left - box.left + rect.width / 2, y: rect.top - box.top };
}

/** (Re)draw the arcs of one snippet from where its tokens are now laid out (the text wraps with the width). */
function drawArcs(snippet) {
  const svg = snippet.querySelector('svg');
  const spans = snippet.querySelectorAll('.corpus-token');
  const box = snippet.getBoundingClientRect();
  svg.setAttribute('width', String(Math.ceil(box.width)));
  svg.setAttribute('height', String(Math.ceil(box.height)));
  const paths = [];
  for (const pair of JSON.parse(snippet.dataset.pairs)) {
    const from = spans[pair.query];
    const to = spans[pair.key];
    if (!from || !to) continue;
    const path = document.createElementNS(SVG, 'path');
    const stroke = arcStroke(pair.weight);
    path.setAttribute('d', arcPath(anchor(from, box), anchor(to, box)));
    path.setAttribute('class', 'corpus-arc');
    path.setAttribute('stroke-width', String(stroke.width));
    path.setAttribute('stroke-opacity', String(stroke.opacity));
    path.setAttribute('marker-end', 'url(#corpus-arrow)'); // ui-text: not UI (an SVG reference)
    path.dataset.query = String(pair.query);
    path.dataset.key = String(pair.key);
    paths.push(path);
  }
  svg.querySelectorAll('path').forEach((old) => old.remove());
  svg.append(...paths);
}

function snippetOf(result, href) {
  const link = element('a', 'corpus-snippet');
  link.href = href;
  link.dataset.pairs = JSON.stringify(result.pairs.map(({ query, key, weight }) => ({ query, key, weight })));
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', 'corpus-arcs');
  svg.setAttribute('aria-hidden', 'true');
  const line = element('span', 'corpus-line');
  line.setAttribute('translate', 'no');
  snippetTokens(result.tokens, result.pairs).forEach((token, i) => {
    const span = element('span', 'corpus-token', token.text);
    span.dataset.index = String(i);
    span.classList.toggle('is-continued', token.continued);
    span.classList.toggle('is-query', token.query);
    span.classList.toggle('is-key', token.key);
    line.append(span);
  });
  link.append(svg, line);
  return link;
}

function pairsOf(result) {
  const list = element('ul', 'corpus-pairs');
  for (const pair of result.pairs) {
    const item = element('li', 'corpus-pair');
    const query = element('span', 'corpus-pair-query', pair.query_token);
    const key = element('span', 'corpus-pair-key', pair.key_token);
    query.setAttribute('translate', 'no');
    key.setAttribute('translate', 'no');
    item.append(query, element('span', 'corpus-pair-arrow', ' → '), key,
      element('span', 'corpus-pair-weight', ` ${formatValue(pair.weight)}`));
    list.append(item);
  }
  return list;
}

/** "to_previous 0.91": the metric's name is data (translate="no"); "weight 0.52" for a pattern query. */
function valueOf({ label, data }, value) {
  const span = element('span', 'corpus-value');
  span.append(...tNodes('corpus.text.value', { metric: label, value: formatValue(value) }, data ? ['metric'] : []));
  return span;
}

/**
 * Draw the texts into `list` (an <ol>): each a card with its rank, its value, the snippet (a link: `hrefOf(result)`)
 * and its pairs. `valueLabel` names the value: {label, data} (a metric's name, data; or the word for a pair's weight).
 */
export function renderTexts(list, results, { hrefOf, valueLabel }) {
  const cards = results.map((result, rank) => {
    const card = element('li', 'corpus-text');
    card.dataset.textId = String(result.text_id);
    const head = element('div', 'corpus-text-head');
    head.append(
      element('span', 'corpus-rank', t('corpus.text.rank', { rank: rank + 1 })),
      valueOf(valueLabel, result.value),
      element('span', 'corpus-line-id', t('corpus.text.line', { line: result.text_id + 1 })),
    );
    card.append(head, snippetOf(result, hrefOf(result)), pairsOf(result));
    return card;
  });
  list.replaceChildren(...cards);
  redrawArcs(list);
}

/** Redraw every snippet's arcs (after the layout changed: a resize, a font loaded). */
export function redrawArcs(list) {
  list.querySelectorAll('.corpus-snippet').forEach(drawArcs);
}
