// The explorer's view options: what the large map shows (kind), the grid's colouring by a head
// metric, the colour scale (each head's own maximum or one shared scale; a gamma), word view and
// hidden special tokens. Each control reports a change of the URL's choices (views/explorer-state.js).
import { t } from '../i18n/index.js';
import { GAMMAS, KINDS, METRICS } from './explorer-state.js';

function fill(select, entries) {
  select.replaceChildren(...entries.map(([value, text]) => {
    const option = document.createElement('option');
    option.value = value;
    option.textContent = text;
    return option;
  }));
}

/** A metric's name in the page's language. */
export const metricName = (metric) => t(`explorer.metric.${metric}`);

/**
 * @param {{kind: HTMLSelectElement, colour: HTMLSelectElement, scale: HTMLSelectElement,
 *   gamma: HTMLSelectElement, words: HTMLInputElement, specials: HTMLInputElement}} els
 * @param {{onChange: (change: object) => void}} options
 */
export function createOptions(els, { onChange }) {
  fill(els.kind, KINDS.map((kind) => [kind, t(`explorer.kind.${kind}`)]));
  fill(els.colour, [['', t('explorer.colourBy.none')], ...METRICS.map((metric) => [metric, metricName(metric)])]);
  fill(els.scale, [['own', t('explorer.scale.own')], ['shared', t('explorer.scale.shared')]]);
  fill(els.gamma, GAMMAS.map((gamma) => [String(gamma), gamma === 1 ? t('explorer.scale.linear') : `γ = ${gamma}`]));

  els.kind.addEventListener('change', () => onChange({ kind: els.kind.value }));
  els.colour.addEventListener('change', () => onChange({ colour: els.colour.value || null }));
  els.scale.addEventListener('change', () => onChange({ shared: els.scale.value === 'shared' }));
  els.gamma.addEventListener('change', () => onChange({ gamma: Number(els.gamma.value) }));
  els.words.addEventListener('change', () => onChange({ words: els.words.checked, focus: null }));
  els.specials.addEventListener('change', () => onChange({ hideSpecial: els.specials.checked }));

  return {
    /** Show the URL's choices; an edit shows attention weights only (the aggregates have no edit). */
    write(choices) {
      els.kind.value = choices.edit ? 'weight' : choices.kind;
      els.kind.disabled = Boolean(choices.edit);
      els.kind.title = choices.edit ? t('explorer.kind.editedOnly') : '';
      els.colour.value = choices.colour ?? '';
      els.scale.value = choices.shared ? 'shared' : 'own';
      els.gamma.value = String(choices.gamma);
      els.words.checked = choices.words;
      els.specials.checked = choices.hideSpecial;
    },
    /** Offer only the metrics that can differ between heads for this input (explorer-metrics.js inapplicable). */
    limitMetrics(hidden) {
      for (const option of els.colour.options) {
        const off = hidden.includes(option.value);
        option.disabled = off && option.value !== els.colour.value; // a metric the URL chose stays readable
        option.title = off ? t('explorer.colourBy.inapplicable') : '';
      }
    },
  };
}

/**
 * The sentence under the large map that says what its colours mean; a causal map (figures/colormap.js
 * isCausalMap) adds why its first rows are left out of the scale's top.
 */
export function scaleSentence({ kind, diff, shared, gamma, zmax, causal = false }) {
  if (diff) return t('explorer.scale.legendDiff', { max: zmax.toFixed(4) });
  let key = 'explorer.scale.legendOwn';
  if (shared && kind === 'weight') key = 'explorer.scale.legendShared';
  if (shared && (kind === 'mean' || kind === 'rollout')) key = 'explorer.scale.legendSharedLayers';
  if (shared && kind === 'contribution') key = 'explorer.scale.legendContribution';
  if (causal && key === 'explorer.scale.legendOwn') key = 'explorer.scale.legendOwnCausal';
  const parts = [t(key, { max: zmax.toPrecision(3) })];
  if (causal) parts.push(t('explorer.scale.legendCausal'));
  if (gamma !== 1) parts.push(t('explorer.scale.legendGamma', { gamma }));
  return parts.join(' ');
}

/**
 * The sentence under the large map that says what its rows and columns are and what a row adds up to,
 * true for the map drawn: shares (weight, mean, rollout) sum to 1, an edited − unedited difference of
 * shares to 0, contributions are sizes (no sum).
 */
export function rowsSentence({ kind, diff, edited }) {
  const shares = kind !== 'contribution';
  let key = shares ? 'explorer.rows.shares' : 'explorer.rows.contribution';
  if (diff) key = shares ? 'explorer.rows.diff' : 'explorer.rows.diffContribution';
  else if (edited && shares) key = 'explorer.rows.edited';
  return `${t(key)} ${t('explorer.rows.click')}`;
}

/** The sentence that says what the kind of map shows (and how contribution differs from weight). */
export const kindSentence = (kind) => t(`explorer.kind.note.${kind}`);
