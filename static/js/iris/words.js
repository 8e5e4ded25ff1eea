// The Iris data set in the page's words (/iris): its feature and species names through the
// dictionary (`iris.feature.<name>`, `iris.species.<name>`; a name the dictionary lacks is shown
// as the server sent it), a test flower as the page names it, percentages, and a refusal of the
// server worded from its status and each error item's type and ctx (never from its prose).
// `data` is the answer of GET /api/v1/iris/data.
import { ApiError } from '../api.js';
import { has, t } from '../i18n/index.js';
import { errorMessage } from '../page.js';

const slug = (name) => String(name).toLowerCase().replace(/\(.*?\)/g, '').replace(/^iris[-_ ]/, '').trim().replace(/[\s-]+/g, '_');
const named = (kind, name) => (has(`iris.${kind}.${slug(name)}`) ? t(`iris.${kind}.${slug(name)}`) : String(name));

export const speciesName = (name) => named('species', name);
export const featureNames = (data) => data.features.map((name) => named('feature', name));
export const speciesNames = (data) => data.classes.map(speciesName);
export const fieldLabel = (name) => (has(`iris.field.${name}`) ? t(`iris.field.${name}`) : String(name));

/** Four measurements in cm as "5.9, 3.0, 4.2, 1.5" (4 cm as 4.0). */
export const measurements = (row) => row.map((value) => (Number.isInteger(value) ? value.toFixed(1) : String(value))).join(', ');

export const percent = (value) => `${(100 * value).toFixed(1)} %`;

/** "#3 · versicolor · 5.9, 3.0, 4.2, 1.5 cm": test flower `n` as the page names it. */
export function flowerText(data, n) {
  const row = data.test[n];
  return t('iris.flowerOption', { n, species: speciesNames(data)[data.labels[row]], values: measurements(data.rows[row]) });
}

/** A refusal of the server in the page's words, from its status and each item's type and ctx. */
export function refusal(error, data = null) {
  if (!(error instanceof ApiError)) return errorMessage(error);
  const items = Array.isArray(error.body?.errors) ? error.body.errors : [];
  if (error.status === 429) {
    const wait = error.retryAfter ?? items.find((item) => item.type === 'jobs_busy')?.ctx?.retry_after;
    return wait ? t('iris.error.busy', { seconds: wait }) : t('iris.error.busyQuiet');
  }
  if (error.status === 404) return t('iris.error.gone');
  if (error.status === 422 && items.length) {
    return items.map((item) => {
      const loc = (item.loc ?? []).map(String).filter((part) => part !== 'body');
      const feature = loc[0] === 'features' && loc.length > 1;
      const name = feature ? (data ? featureNames(data)[Number(loc[1])] : undefined) ?? loc[1] : fieldLabel(loc[0] ?? 'request');
      const key = `iris.problem.${item.type}`;
      const problem = has(key) ? t(key, item.ctx ?? {}) : t('iris.problem.invalid');
      return t('iris.error.item', { field: name, problem });
    }).join(' ');
  }
  return errorMessage(error);
}
