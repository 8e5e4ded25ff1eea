// The stage of the walkthrough: one step of multi-head attention with its title,
// explanation (i18n/steps.js) and figures (figures/steps.js). Both /steps and
// /toy draw through it. When a step is drawn, the stage element carries
// data-step="<step>" (and data-head, data-query, data-keys: the first key of the key window,
// and data-draw-ms: how long the figures took to draw) for whoever waits on it.
import { stepSpec, stepVariant } from '../figures/steps.js';
import { stepNote, stepText } from '../i18n/steps.js';
import { dataText, drawGrid } from './figure-grid.js';

const DATA_MARK = '\u0000'; // stands for the query token in the text until it is put in as data

/** Put `text` into `element`, with each DATA_MARK replaced by `data` marked as data (translate="no"). */
function fill(element, text, data) {
  const parts = text.split(DATA_MARK);
  element.replaceChildren(...parts.flatMap((part, i) => (i === 0 ? [part] : [dataText(data), part])));
}

/**
 * @param {HTMLElement} root holding #stage-title, #stage-body, #stage-note and #stage-grid
 * @param {{onDrawn?: (spec: object) => (void|Promise<void>)}} [options] onDrawn gets each drawn
 *   step's spec (its windows and overview)
 */
export function createStepStage(root, { onDrawn = () => {} } = {}) {
  const title = root.querySelector('#stage-title');
  const body = root.querySelector('#stage-body');
  const note = root.querySelector('#stage-note');
  const grid = root.querySelector('#stage-grid');
  let data = null;
  let selection = { head: 0, query: 0, keys: null };
  let seq = 0;

  function placeholders() {
    const query = Math.min(selection.query, data.queryLabels.length - 1);
    return {
      scale: data.scale.toFixed(4),
      dHead: data.dHead,
      dValues: data.dValues,
      nHeads: data.nHeads,
      head: selection.head,
      query: `${query} (“${DATA_MARK}”)`,
      temperature: data.temperature,
      seed: data.seed ?? 0,
    };
  }

  /** Use new data (a StepData from figures/steps.js) and a new head/query/key window from now on. */
  function setData(stepData, { head, query, keys = null }) {
    data = stepData;
    selection = { head, query, keys };
  }

  /** Draw `step` of the current data. Resolves when drawn (or superseded by a later call). */
  async function show(step) {
    if (!data) return;
    const mine = ++seq;
    const text = stepText(step, placeholders(), stepVariant(data, step));
    const spec = stepSpec(data, step, { ...selection, width: grid.clientWidth || 1200 });
    const label = data.queryLabels[Math.min(selection.query, data.queryLabels.length - 1)];
    fill(title, text.title, label);
    fill(body, text.body, label);
    note.textContent = spec.noteKey ? stepNote(spec.noteKey) : '';
    note.hidden = !spec.noteKey;
    root.setAttribute('aria-busy', 'true');
    const started = performance.now();
    await drawGrid(grid, spec, ['head', selection.head, 'query', selection.query, step]);
    const drawMs = performance.now() - started;
    if (mine !== seq) return;
    await onDrawn(spec);
    if (mine !== seq) return;
    root.dataset.drawMs = String(Math.round(drawMs));
    root.dataset.step = step;
    root.dataset.head = String(selection.head);
    root.dataset.query = String(selection.query);
    root.dataset.keys = String(spec.windows.keys.start);
    root.setAttribute('aria-busy', 'false');
  }

  return { setData, show };
}
