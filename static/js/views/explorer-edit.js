// What-if edits: the form (layer, heads, and either temperature, hidden keys, ablate or Informer's ProbSparse
// with its factor c) and the banner that marks an edited view, shows the edit, toggles the difference map and
// returns to the unedited answer.
import { t } from '../i18n/index.js';
import { errorMessage } from '../page.js';
import { fillIndices } from './controls.js';
import { PROBSPARSE_FACTOR, indexList } from './explorer-state.js';

const listText = (list) => (list && list.length ? list.join(', ') : '');
const parseList = (text) => {
  const cleaned = text.replace(/\s+/g, '');
  return cleaned ? indexList(cleaned) : [];
};

/** The edit in words: "layer 2, heads 5 · temperature 3 · keys 4, 5 hidden · ablated" or "… · ProbSparse, c = 5". */
export function describeEdit(edit) {
  const parts = [edit.heads ? t('explorer.edit.sumHeads', { layer: edit.layer, heads: listText(edit.heads) })
    : t('explorer.edit.sumAll', { layer: edit.layer })];
  if (edit.kind === 'probsparse') return [...parts, t('explorer.edit.sumProbsparse', { factor: edit.factor })].join(' · ');
  if (edit.temperature !== 1) parts.push(t('explorer.edit.sumTemperature', { temperature: edit.temperature }));
  if (edit.hidden_keys.length) parts.push(t('explorer.edit.sumHidden', { keys: listText(edit.hidden_keys) }));
  if (edit.ablate) parts.push(t('explorer.edit.sumAblate'));
  return parts.join(' · ');
}

/**
 * @param {{form: HTMLFormElement, layer: HTMLSelectElement, heads: HTMLInputElement, kind: HTMLSelectElement,
 *   factor: HTMLInputElement, kindNote: HTMLElement,
 *   temperature: HTMLInputElement, hide: HTMLInputElement, ablate: HTMLInputElement, error: HTMLElement,
 *   banner: HTMLElement, summary: HTMLElement, diff: HTMLButtonElement, undo: HTMLButtonElement}} els
 * @param {{onEdit: (edit: object|null) => void, onDiff: (on: boolean) => void}} options
 */
export function createEditor(els, { onEdit, onDiff }) {
  let diffOn = false;
  let layerChosen = false; // the learner picked the edit's layer: it no longer follows the selected head's
  els.layer.addEventListener('change', () => { layerChosen = true; });
  // ProbSparse replaces the heads' weights: the temperature, hidden keys and ablation are another kind's
  const showKind = () => {
    const sparse = els.kind.value === 'probsparse';
    for (const input of [els.temperature, els.hide, els.ablate]) input.disabled = sparse;
    els.factor.disabled = !sparse;
    els.kindNote.hidden = !sparse;
  };
  els.kind.addEventListener('change', showKind);
  showKind();
  const problem = (key) => {
    els.error.textContent = t(key);
    els.error.hidden = false;
  };

  els.form.addEventListener('submit', (event) => {
    event.preventDefault();
    const heads = parseList(els.heads.value);
    if (heads === null) return problem('explorer.edit.badHeads');
    const chosen = { layer: Number(els.layer.value), heads: heads.length ? heads : null };
    if (els.kind.value === 'probsparse') {
      const factor = Number(els.factor.value);
      if (!Number.isInteger(factor) || factor < 1 || factor > 64) return problem('explorer.edit.badFactor');
      els.error.hidden = true;
      return onEdit({ ...chosen, kind: 'probsparse', factor, temperature: 1, hidden_keys: [], ablate: false });
    }
    const hidden = parseList(els.hide.value);
    const temperature = Number(els.temperature.value);
    if (hidden === null) return problem('explorer.edit.badHide');
    if (!Number.isFinite(temperature) || temperature <= 0) return problem('explorer.edit.badTemperature');
    els.error.hidden = true;
    return onEdit({
      ...chosen, kind: 'weights', factor: PROBSPARSE_FACTOR, temperature, hidden_keys: hidden, ablate: els.ablate.checked,
    });
  });
  els.undo.addEventListener('click', () => onEdit(null));
  els.diff.addEventListener('click', () => onDiff(!diffOn));

  return {
    /**
     * Beside the form too, when the server refused the edit itself (an error whose field is under "edit");
     * true when it did.
     */
    refused(error) {
      const item = error && error.body && Array.isArray(error.body.errors) ? error.body.errors[0] : null;
      if (!item || !Array.isArray(item.loc) || !item.loc.includes('edit')) return false;
      els.error.textContent = errorMessage(error);
      els.error.hidden = false;
      return true;
    },
    /** Show a state's edit in the form and the banner; `layers` are the model's layer indices. Without an
     * edit the form's layer is the selected head's (until the learner picks another). */
    write({ edit, diff, layer }, layers) {
      fillIndices(els.layer, layers);
      els.banner.hidden = !edit;
      document.body.classList.toggle('is-edited', Boolean(edit));
      diffOn = Boolean(edit && diff);
      els.diff.setAttribute('aria-pressed', String(diffOn));
      els.error.hidden = true; // an answer came: whatever the server refused before is gone
      if (!edit) {
        if (!layerChosen && layers.includes(layer)) els.layer.value = String(layer);
        return;
      }
      layerChosen = false;
      els.layer.value = String(edit.layer);
      els.heads.value = listText(edit.heads);
      els.temperature.value = String(edit.temperature);
      els.hide.value = listText(edit.hidden_keys);
      els.ablate.checked = edit.ablate;
      els.kind.value = edit.kind;
      els.factor.value = String(edit.factor);
      showKind();
      els.summary.textContent = describeEdit(edit);
    },
  };
}
