// The /toy page's words for the server's refusals, with no DOM: each error item
// {loc, msg, type, ctx} becomes the field it points at and a line naming that field as the page
// labels it ("Queries, row q1, column 2: …"). The problem is the dictionary's toy.problem.<type>
// filled from the item's ctx, or else the server's own msg; it is never worked out from the sizes
// the page sent, nor read from the server's prose.
import { has, lang, t } from '../i18n/index.js';

const WEIGHTS = ['q', 'k', 'v', 'o'];
const OPTIONS = ['variant', 'temperature', 'seed', 'factor', 'scale', 'tau', 'delta', 'straight_through', 'd_keys', 'd_values', 'positions', 'hidden_keys'];
const locale = lang === 'zh' ? 'zh-CN' : 'en';

/** Items as a list in the page's language: "1, 2, or 4" / "1、2或4". */
export const listOf = (items, type) => new Intl.ListFormat(locale, { type }).format(items.map(String));

const rowName = (name, i) => (name === 'queries' ? `q${i}` : name === 'keys' || name === 'values' ? `k${i}` : String(i));

/** How the editor labels row i of a matrix (q0…, k0…, or the row number for weights). */
export const rowLabel = (name) => (['queries', 'keys', 'values'].includes(name) ? (i) => rowName(name, i) : null);

/** "Queries, row q1, column 2" / "Queries, row q1" / "Queries": where a message points. */
export function placeName(name, row = null, col = null) {
  const matrix = t(`toy.name.${name}`);
  if (row === null) return matrix;
  if (col === null) return t('toy.where.row', { matrix, row: rowName(name, row) });
  return t('toy.where.cell', { matrix, row: rowName(name, row), col });
}

/** Which editor or field an error's loc (["body", "queries", "1", "2"]) points at. */
export function fieldOf(loc) {
  const path = (Array.isArray(loc) ? loc : []).map(String);
  const [first, second, ...rest] = path[0] === 'body' ? path.slice(1) : path;
  const index = (text) => (text !== undefined && /^\d+$/.test(text) ? Number(text) : null);
  if (['queries', 'keys', 'values'].includes(first)) {
    return { kind: 'matrix', name: first, row: index(second), col: index(rest[0]) };
  }
  if (first === 'weights' && WEIGHTS.includes(second)) {
    return { kind: 'matrix', name: `w${second}`, row: index(rest[0]), col: index(rest[1]) };
  }
  if (first === 'n_heads' || first === 'causal' || OPTIONS.includes(first)) return { kind: first };
  if (first === 'additive') return { kind: 'variant' }; // the additive parameters belong to the variant
  return { kind: 'request' };
}

function placeOf(field) {
  if (field.kind === 'matrix') return placeName(field.name, field.row, field.col);
  return t(`toy.name.${field.kind}`);
}

/** What the request held at an error's loc (undefined when the path leads nowhere). */
function sentAt(body, loc) {
  const path = (Array.isArray(loc) ? loc : []).map(String);
  return (path[0] === 'body' ? path.slice(1) : path).reduce((part, key) => (part == null ? undefined : part[key]), body);
}

const number = new Intl.NumberFormat(locale, { maximumFractionDigits: 6 });
const divisorsOf = (d) => Array.from({ length: d }, (_, i) => i + 1).filter((n) => d % n === 0);

/** The ctx numbers as the page writes them, plus `divisors` for the rules about n_heads and d_model. */
function words(ctx) {
  const values = {};
  for (const [key, value] of Object.entries(ctx && typeof ctx === 'object' ? ctx : {})) {
    values[key] = typeof value === 'number' ? number.format(value) : String(value);
  }
  const d = ctx?.d_model;
  if (Number.isInteger(d) && d > 0 && d <= 4096) values.divisors = listOf(divisorsOf(d).map((n) => number.format(n)), 'disjunction');
  return values;
}

/** The problem of one error item in the page's language, or else the server's own words. */
function problemOf(item, sent) {
  const type = String(item.type ?? '');
  // pydantic says float_type both for text and for null: the page sent null for a cell left empty
  if (type === 'float_type' && sent === null) return t('toy.problem.empty');
  if (has(`toy.problem.${type}`)) return t(`toy.problem.${type}`, words(item.ctx));
  return (typeof item.msg === 'string' && item.msg) || t('toy.problem.invalid');
}

/** The server's error items for the request `body` it refused: [{field, text}], in order. */
export function describeErrors(items, body) {
  return items.map((item) => {
    const field = fieldOf(item.loc);
    const problem = problemOf(item, sentAt(body, item.loc));
    return { field, problem, text: t('toy.error.item', { place: placeOf(field), problem }) };
  });
}
