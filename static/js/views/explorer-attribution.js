// The explorer's "How much do these explanations agree?" panel (POST /api/v1/attribution): for the sentence,
// one output's attribution per token (integrated gradients or gradient × input) beside the last layer's
// attention, rollout and contributions, each as a bar, with each one's Spearman ρ, the completeness check and
// the baseline stated. The output: for a model with an LM head the next-token logit of a typed token (turned
// into its id by POST /api/v1/token, refused when it is not one token), for an encoder the cosine similarity to a
// second text. The baseline is a choice (the mean embedding by default). When completeness fails (the answer's
// completeness.ok is false) the panel shows why and what to change in place of the ranking: no table, no ρ. A run
// is an action (Run), not part of the URL. Token text reaches the DOM through textContent.
// For a model with an LM head, a second form attributes a continuation (POST /api/v1/attribution/continuation): n
// tokens generated greedily, each one's log-probability split over every token before it, drawn as a heatmap
// continuation × tokens (figures/continuation.js) with a caption from the answer drawn.
import { getAttribution, getContinuationAttribution, getSingleToken } from '../api.js';
import { continuationFigure, continuationSummary } from '../figures/continuation.js';
import { renderFigure } from './plot.js';
import { loadPlotly } from './plotly-loader.js';
import { tokenLabel } from '../figures/axes.js';
import {
  attributionRows, COMPARED, completenessNumbers, shown, shownRho, strongest, unreliable,
} from '../figures/attribution.js';
import { errorMessage, loadModelOf, t } from '../page.js';

const COLUMNS = ['score', ...COMPARED]; // ui-text: not UI (row fields)

function cell(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

/** A caption line: data-kind names it for tests; the parts are strings (textContent) joined. */
function line(kind, text) {
  const p = cell('p', 'attribution-caption', text);
  p.dataset.kind = kind;
  return p;
}

/** The "not one token" refusal of /token in the page's language, else the general wording. */
function targetError(error, text) {
  const item = error && error.body && Array.isArray(error.body.errors) ? error.body.errors[0] : null;
  if (item && item.type === 'not_single_token') return t('attribution.notOneToken', { text, count: item.ctx.count });
  return errorMessage(error);
}

/** @param {HTMLElement} panel the section (templates/index.html, id attribution-panel) */
export function createAttributionPanel(panel) {
  const $ = (id) => panel.querySelector(`#${id}`);
  const els = {
    form: $('attribution-form'), target: $('attribution-target'), targetLabel: $('attribution-target-label'),
    method: $('attribution-method'), steps: $('attribution-steps'), run: $('attribution-run'),
    baseline: $('attribution-baseline'), status: $('attribution-status'), captions: $('attribution-captions'),
    head: $('attribution-head'), body: $('attribution-body'), result: $('attribution-result'),
    warning: $('attribution-warning'), ranking: $('attribution-ranking'),
    baselineText: $('attribution-baseline-text'), baselineTextOption: $('attribution-baseline-text-option'),
    continuationForm: $('continuation-form'), continuationNew: $('continuation-new'),
    continuationRun: $('continuation-run'), continuationResult: $('continuation-result'),
    continuationGrid: $('continuation-grid'), continuationCaption: $('continuation-caption'),
  };
  let current = { text: null, model: null, lmHead: false };
  let seq = 0;

  function say(message, error = false) {
    els.status.textContent = message;
    els.status.hidden = !message;
    els.status.classList.toggle('is-error', error);
  }

  function drawTable(answer) {
    const rows = attributionRows(answer);
    const method = t(`attribution.method.${answer.method}`);
    els.head.replaceChildren(...['token', ...COLUMNS].map((name) => {
      const th = cell('th', '', name === 'score' ? `${t('attribution.column.score')} (${method})`
        : t(`attribution.column.${name}`));
      th.scope = 'col';
      return th;
    }));
    els.body.replaceChildren(...rows.map((row) => {
      const tr = document.createElement('tr');
      tr.dataset.index = String(row.index);
      const name = cell('th', 'attribution-token', row.label);
      name.scope = 'row';
      name.translate = false;
      tr.append(name);
      for (const column of COLUMNS) {
        const td = cell('td', `attribution-cell is-${column}`);
        td.dataset.column = column;
        td.dataset.value = String(row[column]);
        const bar = cell('span', 'attribution-bar');
        bar.style.setProperty('--w', String(row.widths[column]));
        if (column === 'score') bar.classList.add(row.sign < 0 ? 'is-negative' : 'is-positive');
        td.append(bar, cell('span', 'attribution-number', shown(row[column])));
        tr.append(td);
      }
      return tr;
    }));
  }

  function drawCaptions(answer, targetShown) {
    const method = t(`attribution.method.${answer.method}`);
    const value = shown(answer.output);
    const output = answer.output_name === 'logit'
      ? t('attribution.output.logit', { token: targetShown, id: answer.target, value, method })
      : t('attribution.output.cosine', { target: answer.target, value, method });
    const numbers = completenessNumbers(answer.completeness);
    const rho = (name) => shownRho(answer.agreement[name]) ?? t('attribution.undefined');
    const baseline = answer.baseline;
    const lines = [
      line('output', output),
      line('completeness', numbers ? t('attribution.completeness', numbers) : t('attribution.completeness.none')),
      line('baseline', baseline.kind === 'pad' || baseline.kind === 'mask'
        ? t(`attribution.baseline.${baseline.kind}`, { token: baseline.token, id: baseline.token_id })
        : t(`attribution.baseline.${baseline.kind}`, { text: baseline.text })),
      line('rows', t(`attribution.rows.${answer.rows}`)),
    ];
    const warning = unreliable(answer);
    els.warning.hidden = !warning;
    els.ranking.hidden = Boolean(warning);
    panel.dataset.reliable = String(!warning);
    if (warning) {
      els.warning.textContent = t(warning.key, warning.values);
      els.captions.replaceChildren(...lines);
      return;
    }
    els.warning.textContent = '';
    lines.push(line('agreement', t('attribution.agreement', {
      method, attention: rho('attention'), rollout: rho('rollout'), contributions: rho('contributions'),
    })));
    if (COMPARED.some((name) => answer.agreement[name] === null)) lines.push(line('undefined', t('attribution.undefinedWhy')));
    const top = strongest(answer.scores);
    lines.push(line('strongest', t('attribution.strongest', { token: tokenLabel(answer.tokens[top]), value: shown(answer.scores[top]) })));
    els.captions.replaceChildren(...lines);
  }

  async function run() {
    const ticket = ++seq;
    const typed = els.target.value;
    if (!typed.trim()) {
      say(t(current.lmHead ? 'attribution.needTarget.lm' : 'attribution.needTarget.encoder'), true);
      return;
    }
    const method = els.method.value;
    const steps = Number(els.steps.value);
    const baseline = els.baseline.value === 'text' ? { text: els.baselineText.value } : els.baseline.value;
    if (els.baseline.value === 'text' && !els.baselineText.value.trim()) {
      say(t('attribution.needBaselineText'), true);
      return;
    }
    panel.setAttribute('aria-busy', 'true');
    say(t('attribution.running'));
    let answer;
    let targetShown = typed;
    try {
      let target = typed;
      if (current.lmHead) {
        let token;
        try {
          token = await getSingleToken({ text: typed, model: current.model });
        } catch (error) {
          throw Object.assign(new Error(targetError(error, typed)), { worded: true });
        }
        target = token.id;
        targetShown = token.display;
      }
      answer = await getAttribution({ text: current.text, model: current.model, target, method, steps, baseline });
    } catch (error) {
      if (ticket !== seq) return;
      panel.setAttribute('aria-busy', 'false');
      say(error.worded ? error.message : errorMessage(error), true);
      return;
    }
    if (ticket !== seq) return;
    say('');
    drawTable(answer);
    drawCaptions(answer, targetShown);
    els.result.hidden = false;
    panel.dataset.method = answer.method;
    panel.setAttribute('aria-busy', 'false');
  }

  async function runContinuation() {
    const ticket = ++seq;
    const baseline = els.baseline.value === 'text' ? 'mean' : els.baseline.value; // a text has no continuation
    const body = { text: current.text, model: current.model, steps: Number(els.steps.value), baseline,
      continuation: { new_tokens: Number(els.continuationNew.value) } };
    panel.setAttribute('aria-busy', 'true');
    say(t('continuation.running'));
    let answer;
    try {
      answer = await getContinuationAttribution(body);
    } catch (error) {
      if (ticket !== seq) return;
      panel.setAttribute('aria-busy', 'false');
      say(errorMessage(error), true);
      return;
    }
    if (ticket !== seq) return;
    say('');
    els.continuationResult.hidden = false;
    const summary = continuationSummary(answer);
    const parts = [t('continuation.caption', { rows: summary.rows, ok: summary.ok })];
    summary.strongest.forEach((s) => parts.push(t('continuation.strongest', { ...s, value: shown(s.value) })));
    if (summary.ok < summary.rows) parts.push(t('continuation.failed'));
    els.continuationCaption.textContent = parts.join('');
    await loadPlotly();
    await renderFigure(els.continuationGrid, continuationFigure(answer, { width: els.continuationGrid.clientWidth || 600 }),
      { filename: 'continuation-attribution' });
    if (ticket !== seq) return;
    panel.setAttribute('aria-busy', 'false');
  }

  els.continuationForm.addEventListener('submit', (event) => {
    event.preventDefault();
    runContinuation();
  });

  els.baseline.addEventListener('change', () => {
    els.baselineTextOption.hidden = els.baseline.value !== 'text';
  });

  els.form.addEventListener('submit', (event) => {
    event.preventDefault();
    run();
  });

  return {
    /** Follow the explorer's sentence and model: the target field fits the model; an older result is cleared. */
    async draw(state, tokens) {
      const model = await loadModelOf(state.model);
      const lmHead = Boolean(model && model.lm_head);
      const changed = current.text !== state.text || current.model !== (model ? model.id : state.model);
      current = { text: state.text, model: model ? model.id : state.model, lmHead };
      panel.hidden = !tokens.length;
      els.continuationForm.hidden = !lmHead;
      els.targetLabel.textContent = t(lmHead ? 'attribution.target.lm' : 'attribution.target.encoder');
      els.target.placeholder = t(lmHead ? 'attribution.target.lmPlaceholder' : 'attribution.target.encoderPlaceholder');
      if (changed) {
        seq += 1; // a run still under way is for the old sentence
        const hadResult = !els.result.hidden;
        els.result.hidden = true;
        els.continuationResult.hidden = true;
        panel.setAttribute('aria-busy', 'false');
        say(hadResult ? t('attribution.stale') : '');
      }
    },
  };
}
