// Small DOM builders for the learning path's chapters: elements with attributes and children, words
// from the dictionary, and data (a token, the learner's sentence) always as text in translate="no".
import { t, tNodes } from '../i18n/index.js';

/** <tag attrs…>children</tag>; strings become text nodes, null children are skipped. */
export function el(tag, attrs = {}, children = []) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'dataset') Object.assign(element.dataset, value);
    else if (name === 'text') element.textContent = value;
    else if (name === 'on') for (const [event, handler] of Object.entries(value)) element.addEventListener(event, handler);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of [].concat(children)) {
    if (child === null || child === undefined) continue;
    element.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return element;
}

/** An element holding the dictionary's `key`, its {placeholders} filled; names in `data` shown as data. */
export function said(tag, key, values = {}, data = [], attrs = {}) {
  return el(tag, attrs, tNodes(key, values, data));
}

/** A <select> of (value, label) pairs with `value` chosen. */
export function choice(id, options, value, onChange) {
  const select = el('select', { id }, options.map(([v, label]) => el('option', { value: v, text: label })));
  select.value = String(value);
  select.addEventListener('change', () => onChange(select.value));
  return select;
}

/** A labelled field: <div class="field"><label for=id>…</label>control</div>. */
export function field(id, labelKey, control) {
  return el('div', { class: 'field' }, [el('label', { for: id, text: t(labelKey) }), control]);
}

/** A group of toggle buttons (aria-pressed on the chosen one), named by a visible label. */
export function toggles(labelKey, options, value, onChoose, attrs = {}) {
  const label = el('span', { class: 'learn-toggles-label', text: t(labelKey) });
  const buttons = options.map(([v, text, extra = {}]) => el('button', {
    type: 'button', class: 'button-secondary', 'aria-pressed': String(String(v) === String(value)), dataset: { value: String(v) },
    ...extra, on: { click: () => onChoose(v) },
  }, [text]));
  return el('div', { class: 'learn-toggles', role: 'group', 'aria-label': t(labelKey), ...attrs }, [label, ...buttons]);
}

/** A number with at most `digits` decimals, trailing zeros dropped. */
export const fixed = (x, digits = 3) => String(Number(x.toFixed(digits)));

/** A share in [0, 1] as a percentage with one decimal. */
export const percent = (x) => `${(100 * x).toFixed(1)}%`;
