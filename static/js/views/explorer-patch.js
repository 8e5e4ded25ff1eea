// The explorer's activation patching panel (POST /api/v1/patch): the sentence is the clean text; the user types a
// corrupted one of the same token count (prefilled with two words swapped), chooses what to patch (each head's
// output, at every position or at one; each head's attention pattern; each MLP's output or the residual stream at
// each layer and position) and, for a model with an LM head, the two answer tokens whose logit difference is the
// metric (sent as typed: the server turns each into its one token, or says it is not one).
// The grid is a Plotly heatmap (figures/patch.js), heads grouped by key-value head; a head and position grid is
// shown as layers × heads at each cell's best position or at the slider's position. A gap too small to divide by
// shows the raw metric with a note saying why. A click on a head's cell selects that layer and head in the
// explorer. A run is an action (Run), not part of the URL. Token text reaches the DOM through textContent.
import { getPatch } from '../api.js';
import { patchCaptionParts, patchFigure, patchView, positionLabel, rawNoteParts, suggestCorrupted } from '../figures/patch.js';
import { tNodes } from '../i18n/index.js';
import { errorMessage, loadModelOf, t } from '../page.js';
import { renderFigure } from './plot.js';
import { loadPlotly } from './plotly-loader.js';

/** A refusal of /patch in the page's language where the panel knows its rule, else the server's own words. */
function refusal(error, answer) {
  const item = error && error.body && Array.isArray(error.body.errors) ? error.body.errors[0] : null;
  if (item && item.type === 'token_counts_differ') return t('patch.countsDiffer', item.ctx);
  if (item && item.type === 'answer_not_single_token') {
    const which = Number(item.loc[item.loc.length - 1]);
    return t('patch.notOneToken', { text: answer[which], count: item.ctx.tokens });
  }
  return errorMessage(error);
}

/**
 * @param {HTMLElement} panel the section (templates/index.html, id patch-panel)
 * @param {{onSelect: (layer: number, head: number) => void}} options a head's cell was clicked
 */
export function createPatchPanel(panel, { onSelect }) {
  const $ = (id) => panel.querySelector(`#${id}`);
  const els = {
    form: $('patch-form'), corrupted: $('patch-corrupted'), target: $('patch-target'), answers: $('patch-answers'),
    good: $('patch-good'), bad: $('patch-bad'), run: $('patch-run'), status: $('patch-status'),
    result: $('patch-result'), metric: $('patch-metric'), grid: $('patch-grid'), caption: $('patch-caption'),
    raw: $('patch-raw'), positions: $('patch-positions'), best: $('patch-best'), position: $('patch-position'),
    positionLabel: $('patch-position-label'), legend: $('patch-legend'),
  };
  let current = { text: null, model: null, lmHead: false, layer: null, head: null };
  let suggested = null; // the corrupted text the panel filled in (replaced when the sentence changes)
  let shown = null; // {answer, text, model}: the grid on screen
  let position = null; // head_position's chosen position; null: each cell's best
  let seq = 0;

  function say(message, error = false) {
    els.status.textContent = message;
    els.status.hidden = !message;
    els.status.classList.toggle('is-error', error);
  }

  async function drawGrid() {
    const { answer } = shown;
    await loadPlotly();
    const width = els.grid.clientWidth || 600;
    await renderFigure(els.grid, patchFigure(answer, { layer: current.layer, head: current.head, width, position }),
      { filename: `patch-${answer.target}` });
    if (!els.grid.dataset.bound) {
      els.grid.dataset.bound = '1';
      els.grid.on('plotly_click', (event) => {
        const point = event.points && event.points[0];
        if (shown && patchView(shown.answer).columns === 'head' && point && Array.isArray(point.customdata)) {
          onSelect(point.customdata[0], point.customdata[1]);
        }
      });
    }
  }

  function drawCaption(answer) {
    const caption = patchCaptionParts(answer, position);
    els.caption.replaceChildren(...tNodes(caption.key, caption.values, caption.data));
    if (answer.target === 'head_position') {
      els.positionLabel.replaceChildren(...(position === null ? [document.createTextNode('')]
        : tNodes('patch.position.at', { position, token: positionLabel(answer, position) }, ['token'])));
    }
    panel.dataset.position = position === null ? 'best' : String(position);
  }

  function drawAnswer(answer) {
    const metric = t(`patch.metric.${answer.metric_name}`);
    const parts = [t('patch.metricLine', {
      metric, clean: answer.metric.clean.toFixed(4), corrupted: answer.metric.corrupted.toFixed(4),
    })];
    if (answer.answer) parts.push(` · ${t('patch.answerLine', { good: answer.answer[0].id, bad: answer.answer[1].id })}`);
    els.metric.textContent = parts.join('');
    const note = rawNoteParts(answer);
    els.raw.hidden = note === null;
    els.raw.textContent = note === null ? '' : t(note.key, note.values);
    els.legend.hidden = note !== null; // the legend's ratio is not what a raw grid shows
    panel.dataset.normalised = String(note === null);
    const byPosition = answer.target === 'head_position';
    els.positions.hidden = !byPosition;
    position = null;
    if (byPosition) {
      els.best.checked = true;
      els.position.max = String(answer.clean_tokens.length - 1);
      els.position.value = String(answer.clean_tokens.length - 1);
      els.position.disabled = true;
    }
    drawCaption(answer);
  }

  async function choosePosition() {
    if (!shown) return;
    position = els.best.checked ? null : Number(els.position.value);
    els.position.disabled = els.best.checked;
    drawCaption(shown.answer);
    await drawGrid();
  }

  els.best.addEventListener('change', choosePosition);
  els.position.addEventListener('input', choosePosition);

  async function run() {
    const ticket = ++seq;
    const { text, model, lmHead } = current;
    if (text === null) return;
    const corrupted = els.corrupted.value;
    const answer = lmHead ? [els.good.value, els.bad.value] : null;
    if (answer && answer.some((value) => value === '')) {
      say(t('patch.answerMissing'), true);
      return;
    }
    panel.setAttribute('aria-busy', 'true');
    els.run.disabled = true;
    say(t('patch.running'));
    let found;
    try {
      found = await getPatch({ clean: text, corrupted, model, target: els.target.value, answer });
    } catch (error) {
      if (ticket !== seq) return;
      panel.setAttribute('aria-busy', 'false');
      els.run.disabled = false;
      say(refusal(error, answer || []), true);
      return;
    }
    if (ticket !== seq) return;
    shown = { answer: found, text, model };
    say('');
    els.result.hidden = false;
    drawAnswer(found);
    await drawGrid();
    if (ticket !== seq) return;
    els.run.disabled = false;
    panel.dataset.target = found.target;
    panel.setAttribute('aria-busy', 'false');
  }

  els.form.addEventListener('submit', (event) => {
    event.preventDefault();
    run();
  });

  return {
    /** Follow the explorer's sentence, model and selected head. */
    async draw(state, tokens) {
      const model = await loadModelOf(state.model);
      const lmHead = Boolean(model && model.lm_head);
      const changed = state.text !== current.text || state.model !== current.model;
      const moved = state.layer !== current.layer || state.head !== current.head;
      current = { text: state.text, model: state.model, lmHead, layer: state.layer, head: state.head };
      els.answers.hidden = !lmHead;
      if (changed) {
        if (els.corrupted.value === '' || els.corrupted.value === suggested) {
          suggested = suggestCorrupted(state.text || '');
          els.corrupted.value = suggested;
        }
        if (shown && (shown.text !== state.text || shown.model !== state.model)) {
          shown = null; // the grid of another sentence is gone
          els.result.hidden = true;
          say('');
        }
      } else if (shown && moved && tokens.length) {
        await drawGrid(); // the selected head's outline
      }
    },
  };
}
