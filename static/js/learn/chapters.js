// The seventeen chapters of the learning path, in the course notes' order: each one's dictionary prefix, URL
// parameters (with defaults), live view and the full pages it opens at the same state. A chapter's number
// is its place in CHAPTERS (its URL is /learn/N); its words are the dictionaries' (`${key}.title`, `.lead`,
// `.p1`…, `.try1`…). The first nine chapters written keep their first prefixes (learn.c1 … learn.c9) while
// their places moved; chapters added later are named (learn.history, learn.induction, learn.fast). The
// views are in views-*.js. Every link keeps the page's `lang` parameter when the URL has one.
import { exact, inBinaryUnit } from '../figures/cost.js';
import { lang } from '../i18n/index.js';
import { itView, headsView, lookupView, specialsView } from './views-model.js';
import { backwardView, byHandView, maskView, TEMPERATURES, VARIANTS, variantsView } from './views-lab.js';
import { bothUnits, costView, EMBEDDINGS, HEADS, LENGTHS, positionsView, SEQ_LENS, WIDTHS as POSITION_WIDTHS } from './views-sizes.js';
import { historyView } from './views-history.js';
import { inductionView } from './views-induction.js';
import { BLOCKS, fastView } from './views-fast.js';
import { blockView } from './views-block.js';
import { DISTANCES, sequenceState, sequenceView } from './views-sequence.js';
import { informerView, LAB_LONGEST, WINDOWS as INFORMER_WINDOWS } from './views-informer.js';
import { glimpseView, TAUS } from './views-glimpse.js';
import { lmView } from './views-lm.js';
import { WIDTHS } from './saturation.js';

// Readers of one URL parameter: the value, or null for anything else (the default is then used).
const index = (max) => (text) => (/^\d{1,4}$/.test(text ?? '') && Number(text) <= max ? Number(text) : null);
const oneOf = (list) => (text) => {
  const found = list.find((item) => String(item) === text);
  return found === undefined ? null : found;
};
const flag = (text) => (text === '1' ? true : text === '0' ? false : null);

/** The notes' example for 'it → animal' (the real-model chapter): the head of MiniLM where 'it' looks at
 * 'animal' most (layer 3, head 1: 0.68 of its weight, measured with /api/v1/attention), and the token 'it'. */
export const IT_EXAMPLE = Object.freeze({ layer: 3, head: 1, query: 10 });

/** The notes' example of the attention matrix's size: N = 100,000 tokens, H = 64 heads, 2 bytes a number. */
export const NOTES_EXAMPLE = Object.freeze({ seqLen: 100000, heads: 64, bytes: 2 });

/** B·H·S²·b of the notes' example (B = 1): exact in a float64 (1.28 × 10¹² < 2⁵³). */
export const notesMatrixBytes = () => NOTES_EXAMPLE.seqLen ** 2 * NOTES_EXAMPLE.heads * NOTES_EXAMPLE.bytes;

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
const LOCALE = lang === 'zh' ? 'zh-CN' : 'en';

const CHAPTER_LIST = [
  {
    key: 'learn.history',
    params: { head: [0, index(1)], step: [2, index(3)] },
    view: historyView,
    links: (s) => [
      { key: 'learn.history.open', href: pageLink('/seq2seq') },
      // the same setup on /toy: the example's rows as the values too (c = Σ α h, as in Bahdanau's model)
      { key: 'learn.history.toy', href: pageLink('/toy', { variant: 'additive', v: s.rows ?? null, head: s.head, query: s.step, step: 'scores' }) },
    ],
  },
  {
    key: 'learn.c1',
    params: { layer: [3, index(63)], head: [1, index(63)], query: [10, index(4095)] },
    view: lookupView,
    // a tip that names a token is shown only when the sentence has that token
    tips: { 'learn.c1.try1': 'it' },
    links: (s) => [{ key: 'learn.c1.open', href: pageLink('/', { text: s.text, layer: s.layer, head: s.head, query: s.query }) }],
  },
  {
    key: 'learn.c2',
    params: { head: [0, index(1)], d: [64, oneOf(WIDTHS)] },
    view: byHandView,
    links: (s) => [{ key: 'learn.c2.open', href: pageLink('/toy', { head: s.head, step: 'scale' }) }],
  },
  {
    key: 'learn.c3',
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
    key: 'learn.c4',
    params: { layer: [0, index(63)], head: [0, index(63)] },
    view: headsView,
    links: (s) => [
      { key: 'learn.c4.open', href: pageLink('/', { text: s.text, layer: s.layer, head: s.head }) },
      { key: 'learn.c4.widths', href: pageLink('/toy', { d_keys: 1, d_values: 3, step: 'split' }) },
    ],
  },
  {
    key: 'learn.c5',
    params: { causal: [true, flag] },
    view: maskView,
    links: (s) => [{ key: 'learn.c5.open', href: pageLink('/toy', { causal: onlyIf(s.causal, 1), step: 'mask' }) }],
  },
  {
    key: 'learn.c6',
    params: { length: [32, oneOf(LENGTHS)], d_model: [64, oneOf(POSITION_WIDTHS)] },
    view: positionsView,
    links: (s) => [
      { key: 'learn.c6.open', href: pageLink('/positions', { length: s.length, d_model: s.d_model }) },
      { key: 'learn.c6.shuffle', href: pageLink('/toy', { shuffle: 1 }) },
      // the split step is where RoPE turns q and k (the scores after it are already of turned vectors)
      { key: 'learn.c6.rope', href: pageLink('/toy', { positions: 'rope', step: 'split' }) },
    ],
  },
  {
    key: 'learn.c7',
    params: { layer: [0, index(63)], head: [0, index(63)], query: [1, index(4095)] },
    view: specialsView,
    extra: { heading: 'learn.c7.itHeading', view: (root, ctx, t) => itView(root, ctx, { ...IT_EXAMPLE, text: t('example.animal') }) },
    links: (s, t) => [
      { key: 'learn.c7.open', href: pageLink('/steps', { text: s.text, layer: s.layer, head: s.head, query: s.query }) },
      { key: 'learn.c7.explorer', href: pageLink('/', { text: s.text, layer: s.layer, head: s.head, kind: 'contribution' }) },
      { key: 'learn.c7.itLink', href: pageLink('/', { text: t('example.animal'), ...IT_EXAMPLE }) },
    ],
  },
  {
    key: 'learn.c8',
    params: {},
    view: backwardView,
    links: () => [
      { key: 'learn.c8.open', href: pageLink('/toy', { backward: 1, step: 'softmax' }) },
      { key: 'learn.c8.iris', href: pageLink('/iris', { epochs: 300 }) },
    ],
  },
  {
    key: 'learn.induction',
    params: { layer: [null, index(63)], head: [null, index(63)] },
    view: inductionView,
    links: () => [{ key: 'learn.induction.open', href: pageLink('/induction') }],
  },
  {
    key: 'learn.c9',
    params: { d_model: [4096, oneOf(EMBEDDINGS)], n_heads: [64, oneOf(HEADS)], seq_len: [100000, oneOf(SEQ_LENS)] },
    view: costView,
    // the notes' example, computed: the paragraphs and the contents quote it
    words: () => {
      const bytes = notesMatrixBytes();
      return {
        exampleTokens: exact(NOTES_EXAMPLE.seqLen, LOCALE), exampleHeads: NOTES_EXAMPLE.heads, exampleWidth: NOTES_EXAMPLE.bytes,
        exampleBytes: exact(bytes, LOCALE),
        example: bothUnits(bytes), exampleGib: inBinaryUnit(bytes, 3, 0),
      };
    },
    links: (s) => [{ key: 'learn.c9.open', href: pageLink('/cost', { d_model: s.d_model, n_heads: s.n_heads, seq_len: s.seq_len, bytes: 2 }) }],
  },
  {
    key: 'learn.fast',
    params: { block: [2, oneOf(BLOCKS)] },
    view: fastView,
    // the papers' first authors and the rescale factor: names and a formula, the same in every language
    words: () => ({ linearAuthors: 'Katharopoulos', flashAuthors: 'Dao', rescale: 'exp(m_old − m_new)' }), // ui-text: not UI (names)
    links: (s) => [
      { key: 'learn.fast.open', href: pageLink('/flash', { br: s.block, bc: s.block }) },
      { key: 'learn.fast.toy', href: pageLink('/toy', { variant: 'linear', step: 'scores' }) },
    ],
  },
  {
    key: 'learn.block',
    params: { layer: [0, index(63)], query: [1, index(4095)] },
    view: blockView,
    links: (s) => [
      // the walk of /steps from the block's first step after the attention (views-block.js firstBlockStep)
      { key: 'learn.block.open', href: pageLink('/steps', { text: s.text, layer: s.layer, head: 0, query: s.query, step: s.step ?? 'add_1' }) },
      { key: 'learn.block.attentionLink', href: pageLink('/steps', { text: s.text, layer: s.layer, head: 0, query: s.query }) },
    ],
  },
  {
    key: 'learn.sequence',
    params: { distance: [15, oneOf(DISTANCES)] },
    view: sequenceView,
    links: (s) => {
      const { n, i, j } = sequenceState(s.distance);
      return [{ key: 'learn.sequence.open', href: pageLink('/sequence', { n, i, j }) }];
    },
  },
  {
    key: 'learn.informer',
    params: { window: [96, oneOf(INFORMER_WINDOWS)] },
    view: informerView,
    // the lab trains at the chapter's window when it takes it (its default, 96, is left out of the link)
    links: (s) => [{ key: 'learn.informer.open', href: pageLink('/informer', { window: s.window !== 96 && s.window <= LAB_LONGEST ? s.window : null }) }],
  },
  {
    key: 'learn.glimpse',
    params: { tau: [1, oneOf(TAUS)] },
    view: glimpseView,
    links: () => [{ key: 'learn.glimpse.open', href: pageLink('/glimpse') }],
  },
  {
    key: 'learn.lm',
    params: {},
    view: lmView,
    links: () => [{ key: 'learn.lm.open', href: pageLink('/lm') }],
  },
];

export const CHAPTERS = Object.freeze(CHAPTER_LIST.map((chapter, i) => Object.freeze({ n: i + 1, ...chapter })));

/** The chapter of /learn/N, or null for anything that is not one (the page then shows the contents). */
export function chapterOf(text) {
  if (!/^[1-9]\d{0,3}$/.test(text ?? '')) return null;
  return CHAPTERS[Number(text) - 1] ?? null;
}

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
    if (value === undefined || value === null || value === fallback) continue;
    out.push([name, typeof value === 'boolean' ? (value ? '1' : '0') : String(value)]);
  }
  return out;
}

/** Whether a chapter's tip `key` applies to these tokens: always, unless it names a token the text lacks. */
export function tipApplies(chapter, key, tokens) {
  const needed = chapter.tips?.[key];
  if (needed === undefined) return true;
  return Array.isArray(tokens) && tokens.some((token) => !token.special && token.text.toLowerCase() === needed);
}
