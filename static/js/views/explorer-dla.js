// The explorer's direct logit attribution panel (POST /api/v1/logit-attribution): for a model with an LM head, the
// user types the answer as one token (its logit is split) or two (good − bad: the logit difference) and picks the
// position (the last token by default); each typed answer becomes its one vocabulary id through POST /api/v1/token
// (or the panel says it is not one token). The figure (figures/dla.js) is a layers × heads heatmap grouped by
// key-value head, with a strip for the MLPs and the embeddings; the sentences under it state the sum and the largest
// parts from the answer drawn. A click on a head's cell selects that layer and head in the explorer. For a model
// without an LM head the panel shows only why it cannot run. A run is an action (its button), not part of the URL.
// Token text reaches the DOM through textContent.
import { getLogitAttribution, getSingleToken } from '../api.js';
import { dlaCaptionParts, dlaFigure } from '../figures/dla.js';
import { tNodes } from '../i18n/index.js';
import { errorMessage, loadModelOf, t } from '../page.js';
import { renderFigure } from './plot.js';
import { loadPlotly } from './plotly-loader.js';

/** The first error item of an ApiError's body, or null. */
const firstError = (error) => (error && error.body && Array.isArray(error.body.errors) ? error.body.errors[0] : null);

/**
 * @param {HTMLElement} panel the section (templates/index.html, id dla-panel)
 * @param {{onSelect: (layer: number, head: number) => void}} options a head's cell was clicked
 */
export function createDlaPanel(panel, { onSelect }) {
  const $ = (id) => panel.querySelector(`#${id}`);
  const els = {
    unavailable: $('dla-unavailable'), form: $('dla-form'), good: $('dla-good'), bad: $('dla-bad'),
    position: $('dla-position'), run: $('dla-run'), status: $('dla-status'), result: $('dla-result'),
    grid: $('dla-grid'), caption: $('dla-caption'),
  };
  let current = { text: null, model: null, lmHead: false, nKvHeads: null, layer: null, head: null, count: 0 };
  let shown = null; // {answer, text, model}: the figure on screen
  let seq = 0;

  function say(message, error = false) {
    els.status.textContent = message;
    els.status.hidden = !message;
    els.status.classList.toggle('is-error', error);
  }

  async function drawFigure() {
    const { answer } = shown;
    await loadPlotly();
    const width = els.grid.clientWidth || 600;
    await renderFigure(els.grid, dlaFigure(answer, {
      nKvHeads: current.nKvHeads, layer: current.layer, head: current.head, width,
    }), { filename: 'logit-attribution' });
    if (!els.grid.dataset.bound) {
      els.grid.dataset.bound = '1';
      els.grid.on('plotly_click', (event) => {
        const point = event.points && event.points[0];
        if (point && point.curveNumber === 0 && Array.isArray(point.customdata)) {
          onSelect(point.customdata[0], point.customdata[1]);
        }
      });
    }
  }

  function drawCaption(answer) {
    els.caption.replaceChildren(...dlaCaptionParts(answer).map(({ key, values, data }) => {
      const line = document.createElement('p');
      line.className = 'dla-line';
      line.dataset.key = key;
      line.append(...tNodes(key, values, data));
      return line;
    }));
  }

  /** The typed answers as token ids (null and a message shown when one is not a single token). */
  async function answerIds(model) {
    const typed = [els.good.value, els.bad.value].filter((value, i) => i === 0 || value !== '');
    if (typed[0] === '') {
      say(t('dla.needAnswer'), true);
      return null;
    }
    const ids = [];
    for (const text of typed) {
      try {
        ids.push((await getSingleToken({ text, model })).id);
      } catch (error) {
        const item = firstError(error);
        say(item && item.type === 'not_single_token' ? t('dla.notOneToken', { text, count: item.ctx.count })
          : errorMessage(error), true);
        return null;
      }
    }
    if (ids.length === 2 && ids[0] === ids[1]) {
      say(t('dla.sameAnswer'), true);
      return null;
    }
    return ids;
  }

  async function run() {
    const ticket = ++seq;
    const { text, model, count } = current;
    if (text === null) return;
    const typedPosition = els.position.value.trim();
    const position = typedPosition === '' ? null : Number(typedPosition);
    if (position !== null && !(Number.isInteger(position) && position >= 0 && position < count)) {
      say(t('dla.badPosition', { count, last: count - 1 }), true);
      return;
    }
    panel.setAttribute('aria-busy', 'true');
    els.run.disabled = true;
    say(t('dla.running'));
    const done = (message = '', error = false) => {
      panel.setAttribute('aria-busy', 'false');
      els.run.disabled = false;
      say(message, error);
    };
    let found;
    try {
      const answer = await answerIds(model);
      if (ticket !== seq) return;
      if (answer === null) {
        done(els.status.textContent, true);
        return;
      }
      found = await getLogitAttribution({ text, model, answer, position });
    } catch (error) {
      if (ticket === seq) done(errorMessage(error), true);
      return;
    }
    if (ticket !== seq) return;
    shown = { answer: found, text, model };
    els.result.hidden = false;
    drawCaption(found);
    await drawFigure();
    if (ticket !== seq) return;
    panel.dataset.position = String(found.position);
    done();
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
      current = { text: state.text, model: state.model, lmHead, nKvHeads: model ? model.n_kv_heads ?? null : null,
        layer: state.layer, head: state.head, count: tokens.length };
      els.unavailable.hidden = lmHead;
      els.form.hidden = !lmHead;
      els.position.max = String(Math.max(tokens.length - 1, 0));
      els.position.placeholder = t('dla.positionLast');
      panel.dataset.available = lmHead ? '1' : '0';
      if (changed) {
        if (shown && (shown.text !== state.text || shown.model !== state.model)) {
          shown = null; // the figure of another sentence is gone
          els.result.hidden = true;
          say(lmHead ? t('dla.stale') : '');
        }
        if (!lmHead) {
          els.result.hidden = true;
          say('');
        }
      } else if (shown && moved && tokens.length) {
        await drawFigure(); // the selected head's outline
      }
    },
  };
}
