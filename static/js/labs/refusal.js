// A training lab's refusals in its page's words (/induction, /seq2seq): from the server's status and each error
// item's type and ctx, never from its prose. `prefix` names the page's dictionary keys: <prefix>.error.busy,
// .busyQuiet, .gone, .item and <prefix>.problem.<type>; a field is named by <prefix>.field.<name>.
import { ApiError } from '../api.js';
import { has, t } from '../i18n/index.js';
import { errorMessage } from '../page.js';

/**
 * @param {string} prefix the page's keys ("induction", "seq2seq")
 * @param {(name: string, item: object) => string} [problemKey] the dictionary key of an item's problem (default:
 *   <prefix>.problem.<type>)
 */
export function labRefusal(prefix, problemKey = (_name, item) => `${prefix}.problem.${item.type}`) {
  return (error) => {
    if (!(error instanceof ApiError)) return errorMessage(error);
    const items = Array.isArray(error.body?.errors) ? error.body.errors : [];
    if (error.status === 429) {
      const wait = error.retryAfter ?? items.find((item) => item.type === 'jobs_busy')?.ctx?.retry_after;
      return wait ? t(`${prefix}.error.busy`, { seconds: wait }) : t(`${prefix}.error.busyQuiet`);
    }
    if (error.status === 404) return t(`${prefix}.error.gone`);
    if (error.status === 422 && items.length) {
      return items.map((item) => {
        const name = String((item.loc ?? []).filter((part) => part !== 'body')[0] ?? '');
        const key = problemKey(name, item);
        const problem = has(key) ? t(key, item.ctx ?? {}) : t(`${prefix}.problem.invalid`);
        return t(`${prefix}.error.item`, { field: has(`${prefix}.field.${name}`) ? t(`${prefix}.field.${name}`) : name, problem });
      }).join(' ');
    }
    return errorMessage(error);
  };
}
