// The figures and tables of /lm (a small GPT grown from the learner's own text), pure: the loss against steps
// with the text's unigram and bigram entropies as two level lines (what "learning" means here: below the unigram
// line the network knows more than how often each character comes; below the bigram line, more than which
// character tends to follow which), the heads the detectors found, and the links that open the model elsewhere.
import { FONT, TEXT_COLOUR } from './axes.js';

export const COLOURS = Object.freeze({ train: '#2457c5', val: '#e8590c', unigram: '#868e96', bigram: '#2f9e44' });
export const ROLES = Object.freeze(['previous_token', 'induction', 'positional']);

/**
 * The loss figure: train and held-out loss against steps, and the two entropies as dashed level lines.
 * @param {{step: number, train_loss: number, val_loss: number, unigram_entropy: number, bigram_entropy: number}[]} evals
 * @param {(key: string) => string} label the page's words: train, val, unigram, bigram, steps, nats
 * @param {number} steps the run's last step (the x axis ends there)
 */
export function lossFigure(evals, label, steps) {
  const x = evals.map((e) => e.step);
  const last = evals.at(-1);
  const end = Math.max(steps, x.at(-1) ?? 1, 1);
  const line = (key, value) => ({
    type: 'scatter', mode: 'lines', name: `${label(key)} ${value.toFixed(2)}`, x: [0, end], y: [value, value],
    line: { color: COLOURS[key], dash: 'dash', width: 1.5 }, hovertemplate: `${label(key)}: %{y:.3f}<extra></extra>`,
  });
  const curve = (key, field) => ({
    type: 'scatter', mode: 'lines+markers', name: label(key), x, y: evals.map((e) => e[field]),
    line: { color: COLOURS[key], width: 2 }, marker: { size: 5 }, hovertemplate: `%{x}: %{y:.3f}<extra>${label(key)}</extra>`,
  });
  const data = [curve('train', 'train_loss'), curve('val', 'val_loss')];
  if (last) data.push(line('unigram', last.unigram_entropy), line('bigram', last.bigram_entropy));
  return {
    data,
    layout: {
      font: { family: FONT, size: 12, color: TEXT_COLOUR }, paper_bgcolor: '#ffffff', plot_bgcolor: '#ffffff',
      height: 320, margin: { t: 30, r: 12, b: 44, l: 52 },
      legend: { orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom' },
      xaxis: { title: { text: label('steps'), standoff: 4 }, range: [0, end], gridcolor: '#eef0f3', zeroline: false },
      yaxis: { title: { text: label('nats'), standoff: 4 }, rangemode: 'tozero', gridcolor: '#eef0f3' },
    },
  };
}

/** Where the held-out loss stands against the entropies: 'above' the unigram line, 'between' the two, 'below' both. */
export function standing(evaluation) {
  if (!evaluation) return null;
  if (evaluation.val_loss >= evaluation.unigram_entropy) return 'above';
  return evaluation.val_loss >= evaluation.bigram_entropy ? 'between' : 'below';
}

/**
 * The detectors' table: heads with a role first (most roles, then the highest score), then the rest by layer and head.
 * @param {{layer: number, head: number, previous_token: number, induction: number, positional: number, roles: string[]}[]} heads
 */
export function headRows(heads) {
  const best = (h) => Math.max(...ROLES.map((role) => h[role]));
  return [...heads].sort((a, b) => (b.roles.length - a.roles.length) || (a.roles.length ? best(b) - best(a) : 0)
    || a.layer - b.layer || a.head - b.head);
}

/** /?model=…&text=…&layer=…&head=…: the explorer on the learner's sentence at one head (lang kept when given). */
export function explorerLink(model, text, layer, head, lang = null) {
  const query = new URLSearchParams({ model, text, layer: String(layer), head: String(head) });
  if (lang) query.set('lang', lang);
  return `/?${query}`;
}

/** /steps?model=…&text=…&layer=…&head=…&query=…: one head step by step, the last character as the query. */
export function stepsLink(model, text, layer, head, lang = null) {
  const query = new URLSearchParams({ model, text, layer: String(layer), head: String(head),
    query: String(Math.max(0, Array.from(text).length - 1)) });
  if (lang) query.set('lang', lang);
  return `/steps?${query}`;
}

/** The learner's sentence for the links: the first line of the text, at most `max` characters (whole characters). */
export function firstSentence(text, max = 40) {
  const line = (text ?? '').split(/\r?\n/).map((part) => part.trim()).find((part) => part) ?? '';
  const stop = Array.from(line).findIndex((c, i) => i >= 8 && '.!?。！？'.includes(c));
  const chars = Array.from(line);
  return chars.slice(0, stop >= 0 ? Math.min(stop + 1, max) : max).join('');
}

/** The settings a request sends: the whole numbers of the form, only those given. */
export function trainBody(values) {
  const body = {};
  for (const [name, value] of Object.entries(values)) {
    const text = String(value ?? '').trim();
    if (/^\d{1,9}$/.test(text)) body[name] = Number(text);
  }
  return body;
}
