// The table of every head's metrics (/api/v1/metrics): sortable by any column (click its header),
// a click on a row (or Enter on its head button) selects that head; the labels' thresholds and their
// source are stated under the table. A metric that is 0 for every head whatever the weights (the share
// to [CLS] of an input without one, to the next token in a causal model) is left out, and a line says why.
// Two columns before the labels, each head's previous-token and induction scores, are the answer's `repeated`
// ones, measured on a sequence that repeats rather than on the text; a line under the table says so.
import { t } from '../i18n/index.js';
import { modelOf } from '../page.js';
import { METRICS } from './explorer-state.js';
import { metricName } from './explorer-options.js';

const DIGITS = { entropy: 3, distance: 2 };
const REPEATED = ['previous_token', 'induction'];
const format = (metric, value) => value.toFixed(DIGITS[metric] ?? 3);

const labelName = (label) => t(`explorer.label.${label}`);

/** "[SEP]: share to [SEP] ≥ 0.500" for each label whose metric is shown, from the answer's thresholds ({metric, at_least}). */
function thresholdText(thresholds, shown) {
  return Object.entries(thresholds || {}).flatMap(([label, rule]) => {
    const metric = Array.isArray(rule) ? rule[0] : rule.metric;
    const value = Array.isArray(rule) ? rule[1] : (rule.at_least ?? rule.value);
    return shown.includes(metric) ? [`${labelName(label)}: ${metricName(metric)} ≥ ${Number(value).toFixed(3)}`] : [];
  }).join('; ');
}

/**
 * The thresholds in words, with their numbers: a share label's value (the same for each) and the broad
 * label's entropy as a fraction of a uniform row's ln N (N: the input's tokens).
 */
export function ownThresholds(thresholds, tokens) {
  const rules = Object.values(thresholds || {});
  const share = rules.find((rule) => rule.metric !== 'entropy');
  const broad = rules.find((rule) => rule.metric === 'entropy');
  const fraction = broad && tokens > 1 ? broad.at_least / Math.log(tokens) : null;
  return t('explorer.metrics.own', {
    share: share ? String(share.at_least) : '–',
    broad: fraction === null ? '–' : String(Number(fraction.toPrecision(3))),
    broadName: labelName('broad'),
  });
}

/**
 * The metrics that are 0 for every head of this input whatever the weights, with why: the share to [CLS]
 * when the first token is not one the tokenizer inserted, to [SEP] when no later one is (model/analysis/heads.py
 * token_kinds), to the next token when the model is causal (that key is always masked).
 * @returns {{metric: string, why: 'noSpecial'|'noCls'|'noSep'|'causal'}[]}
 */
export function inapplicable(tokens, model) {
  const cls = tokens.length > 0 && tokens[0].special;
  const sep = tokens.some((token, i) => i > 0 && token.special);
  const out = [];
  if (!cls) out.push({ metric: 'to_cls', why: sep ? 'noCls' : 'noSpecial' });
  if (!sep) out.push({ metric: 'to_sep', why: cls ? 'noSep' : 'noSpecial' });
  if (model && model.causal) out.push({ metric: 'to_next', why: 'causal' });
  return out;
}

/** One sentence naming the metrics left out and why ("… share to [CLS] and share to [SEP] (…); …"), or ''. */
function hiddenText(hidden, model) {
  const groups = [];
  for (const { metric, why } of hidden) {
    const group = groups.find((g) => g.why === why);
    if (group) group.metrics.push(metric);
    else groups.push({ why, metrics: [metric] });
  }
  const reasons = groups.map((g) => t(`followups.metrics.${g.why}`, {
    metrics: g.metrics.map(metricName).join(t('followups.metrics.and')), model: model ? model.id : '',
  }));
  return reasons.length ? t('followups.metrics.hidden', { reasons: reasons.join(t('followups.metrics.separator')) }) : '';
}

/**
 * @param {{head: HTMLTableRowElement, body: HTMLTableSectionElement, thresholds: HTMLElement}} els
 * @param {{onSelect: (layer: number, head: number) => void}} options
 */
export function createMetricsTable(els, { onSelect }) {
  let columns = [];
  let rows = [];
  let sort = { column: 'layer', descending: false };
  let selected = null;
  const note = document.createElement('p');
  note.className = 'hint metrics-hidden';
  note.hidden = true;
  els.thresholds.before(note);
  const repeatedNote = document.createElement('p');
  repeatedNote.className = 'hint metrics-repeated';
  repeatedNote.hidden = true;
  els.thresholds.before(repeatedNote);

  /** The header for these metrics (unchanged when they are the same). */
  function drawHead(metrics) {
    const next = ['layer', 'head', ...metrics, 'labels'];
    if (next.join(',') === columns.join(',')) return;
    columns = next;
    els.head.replaceChildren(...columns.map((column) => {
      const th = document.createElement('th');
      th.scope = 'col';
      th.dataset.column = column;
      if (column === 'labels') {
        th.textContent = t('explorer.metrics.labels');
        return th;
      }
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'sort-button';
      button.textContent = column === 'layer' ? t('pickers.layer') : column === 'head' ? t('pickers.head') : metricName(column);
      button.title = t('explorer.metrics.sortTitle');
      th.append(button);
      return th;
    }));
    if (!columns.includes(sort.column)) sort = { column: 'layer', descending: false };
  }
  drawHead(METRICS);

  els.head.addEventListener('click', (event) => {
    const th = event.target.closest('th');
    if (!th || th.dataset.column === 'labels') return;
    const column = th.dataset.column;
    sort = { column, descending: sort.column === column ? !sort.descending : [...METRICS, ...REPEATED].includes(column) };
    draw();
  });
  els.body.addEventListener('click', (event) => {
    const tr = event.target.closest('tr');
    if (tr) onSelect(Number(tr.dataset.layer), Number(tr.dataset.head));
  });

  function draw() {
    const { column, descending } = sort;
    const sign = descending ? -1 : 1;
    const ordered = [...rows].sort((a, b) => sign * (a[column] - b[column]) || a.layer - b.layer || a.head - b.head);
    for (const th of els.head.children) {
      th.setAttribute('aria-sort', th.dataset.column === column ? (descending ? 'descending' : 'ascending') : 'none');
    }
    els.body.replaceChildren(...ordered.map((row) => {
      const tr = document.createElement('tr');
      tr.dataset.layer = String(row.layer);
      tr.dataset.head = String(row.head);
      for (const name of columns) {
        const cell = document.createElement(name === 'head' ? 'th' : 'td');
        if (name === 'head') {
          cell.scope = 'row';
          const button = document.createElement('button');
          button.type = 'button';
          button.className = 'row-select';
          button.textContent = String(row.head);
          button.setAttribute('aria-label', t('explorer.metrics.rowSelect', { layer: row.layer, head: row.head }));
          cell.append(button);
        } else if (name === 'labels') {
          cell.textContent = row.labels.map(labelName).join(', ');
        } else if (name === 'layer') {
          cell.textContent = String(row.layer);
        } else {
          cell.textContent = format(name, row[name]);
          cell.dataset.value = String(row[name]);
        }
        tr.append(cell);
      }
      return tr;
    }));
    mark();
  }

  function mark() {
    for (const tr of els.body.children) {
      const on = selected && Number(tr.dataset.layer) === selected[0] && Number(tr.dataset.head) === selected[1];
      tr.classList.toggle('is-selected', Boolean(on));
      tr.setAttribute('aria-selected', String(Boolean(on)));
    }
  }

  return {
    /** Fill the table from a /metrics answer. */
    render(answer) {
      const model = modelOf(answer.model);
      const hidden = inapplicable(answer.tokens || [], model);
      const shown = METRICS.filter((metric) => !hidden.some((item) => item.metric === metric));
      const repeated = answer.repeated || null;
      drawHead(repeated ? [...shown, ...REPEATED] : shown);
      note.hidden = hidden.length === 0;
      note.textContent = hiddenText(hidden, model);
      repeatedNote.hidden = !repeated;
      repeatedNote.textContent = repeated ? t('explorer.metrics.repeated', { half: repeated.half, seed: repeated.seed }) : '';
      rows = [];
      const first = answer.metrics[METRICS[0]];
      for (let layer = 0; layer < first.length; layer += 1) {
        for (let head = 0; head < first[layer].length; head += 1) {
          const row = { layer, head, labels: (answer.labels && answer.labels[layer][head]) || [] };
          for (const metric of METRICS) row[metric] = answer.metrics[metric][layer][head];
          for (const metric of repeated ? REPEATED : []) row[metric] = repeated[metric][layer][head];
          rows.push(row);
        }
      }
      // the source is the server's citation, quoted as it came (its title in its own language)
      const source = document.createElement('cite');
      source.translate = false;
      source.textContent = answer.source || '';
      els.thresholds.replaceChildren(
        t('explorer.metrics.thresholds', { rules: thresholdText(answer.thresholds, shown) }), ' ',
        ownThresholds(answer.thresholds, answer.tokens.length), ' ', t('explorer.metrics.source'), ' ', source);
      draw();
    },
    select(layer, head) {
      selected = [layer, head];
      mark();
    },
    clear() {
      rows = [];
      els.body.replaceChildren();
      els.thresholds.textContent = '';
      note.hidden = true;
      repeatedNote.hidden = true;
    },
  };
}
