// The nine chapters of the learning path: each one's URL parameters (with defaults), its live view and
// the full pages it opens at the same state. The words are the dictionaries' (learn.cN.*); the views
// are in views-*.js. Every link keeps the page's `lang` parameter when the URL has one.
import { itView, headsView, lookupView, specialsView } from './views-model.js';
import { backwardView, byHandView, maskView, TEMPERATURES, VARIANTS, variantsView } from './views-lab.js';
import { costView, EMBEDDINGS, HEADS, LENGTHS, positionsView, SEQ_LENS, WIDTHS as POSITION_WIDTHS } from './views-sizes.js';
import { WIDTHS } from './saturation.js';

// Readers of one URL parameter: the value, or null for anything else (the default is then used).
const index = (max) => (text) => (/^\d{1,4}$/.test(text ?? '') && Number(text) <= max ? Number(text) : null);
const oneOf = (list) => (text) => {
  const found = list.find((item) => String(item) === text);
  return found === undefined ? null : found;
};
const flag = (text) => (text === '1' ? true : text === '0' ? false : null);

/** The notes' example for 'it → animal' (chapter 7): the head of MiniLM where 'it' looks at 'animal'
 * most (layer 3, head 1: 0.68 of its weight, measured with /api/v1/attention), and the token 'it'. */
export const IT_EXAMPLE = Object.freeze({ layer: 3, head: 1, query: 10 });

/** A path with query parameters, plus this page's `lang` parameter when it has one. */
export function pageLink(path, params = {}) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== null && value !== undefined) query.set(name, String(value));
  const language = new URLSearchParams(window.location.search).get('lang');
  if (language !== null) query.set('lang', language);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

const onlyIf = (condition, value) => (condition ? value : null);

export const CHAPTERS = Object.freeze([
  {
    n: 1,
    params: { layer: [3, index(63)], head: [1, index(63)], query: [10, index(4095)] },
    view: lookupView,
    links: (s) => [{ key: 'learn.c1.open', href: pageLink('/', { text: s.text, layer: s.layer, head: s.head, query: s.query }) }],
  },
  {
    n: 2,
    params: { head: [0, index(1)], d: [64, oneOf(WIDTHS)] },
    view: byHandView,
    links: (s) => [{ key: 'learn.c2.open', href: pageLink('/toy', { head: s.head, step: 'scale' }) }],
  },
  {
    n: 3,
    params: { variant: ['scaled_dot', oneOf(VARIANTS)], temperature: [0.5, oneOf(TEMPERATURES)], straight: [false, flag], seed: [0, index(9999)] },
    view: variantsView,
    links: (s) => {
      const random = s.variant === 'sample' || s.variant === 'gumbel';
      const gumbel = s.variant === 'gumbel';
      return [{
        key: 'learn.c3.open',
        href: pageLink('/toy', {
          variant: s.variant, temperature: onlyIf(gumbel, s.temperature), seed: onlyIf(random && s.seed, s.seed),
          straight_through: onlyIf(gumbel && s.straight, 1), step: 'softmax',
        }),
      }];
    },
  },
  {
    n: 4,
    params: { layer: [0, index(63)], head: [0, index(63)] },
    view: headsView,
    links: (s) => [
      { key: 'learn.c4.open', href: pageLink('/', { text: s.text, layer: s.layer, head: s.head }) },
      { key: 'learn.c4.widths', href: pageLink('/toy', { d_keys: 1, d_values: 3, step: 'split' }) },
    ],
  },
  {
    n: 5,
    params: { causal: [true, flag] },
    view: maskView,
    links: (s) => [{ key: 'learn.c5.open', href: pageLink('/toy', { causal: onlyIf(s.causal, 1), step: 'mask' }) }],
  },
  {
    n: 6,
    params: { length: [32, oneOf(LENGTHS)], d_model: [64, oneOf(POSITION_WIDTHS)] },
    view: positionsView,
    links: (s) => [
      { key: 'learn.c6.open', href: pageLink('/positions', { length: s.length, d_model: s.d_model }) },
      { key: 'learn.c6.shuffle', href: pageLink('/toy', { shuffle: 1 }) },
      { key: 'learn.c6.rope', href: pageLink('/toy', { positions: 'rope', step: 'scores' }) },
    ],
  },
  {
    n: 7,
    params: { layer: [0, index(63)], head: [0, index(63)], query: [1, index(4095)] },
    view: specialsView,
    extra: (root, ctx, t) => itView(root, ctx, { ...IT_EXAMPLE, text: t('example.animal') }),
    links: (s, t) => [
      { key: 'learn.c7.open', href: pageLink('/steps', { text: s.text, layer: s.layer, head: s.head, query: s.query }) },
      { key: 'learn.c7.explorer', href: pageLink('/', { text: s.text, layer: s.layer, head: s.head, kind: 'contribution' }) },
      { key: 'learn.c7.itLink', href: pageLink('/', { text: t('example.animal'), ...IT_EXAMPLE }) },
    ],
  },
  {
    n: 8,
    params: {},
    view: backwardView,
    links: () => [
      { key: 'learn.c8.open', href: pageLink('/toy', { backward: 1, step: 'softmax' }) },
      { key: 'learn.c8.iris', href: pageLink('/iris', { epochs: 300 }) },
    ],
  },
  {
    n: 9,
    params: { d_model: [4096, oneOf(EMBEDDINGS)], n_heads: [64, oneOf(HEADS)], seq_len: [100000, oneOf(SEQ_LENS)] },
    view: costView,
    links: (s) => [{ key: 'learn.c9.open', href: pageLink('/cost', { d_model: s.d_model, n_heads: s.n_heads, seq_len: s.seq_len, bytes: 2 }) }],
  },
]);

/** A chapter's parameters from a query string (defaults for anything missing or unreadable). */
export function readParams(chapter, params) {
  return Object.fromEntries(Object.entries(chapter.params).map(([name, [fallback, parse]]) => {
    const value = parse(params.get(name));
    return [name, value === null ? fallback : value];
  }));
}

/** The parameters that differ from the chapter's defaults, as strings (booleans as 1 / 0). */
export function writeParams(chapter, state) {
  const out = [];
  for (const [name, [fallback]] of Object.entries(chapter.params)) {
    const value = state[name];
    if (value === undefined || value === fallback) continue;
    out.push([name, typeof value === 'boolean' ? (value ? '1' : '0') : String(value)]);
  }
  return out;
}
