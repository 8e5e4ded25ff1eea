// The window navigator of the walkthrough: when a long input is drawn through windows (see
// figures/steps.js), a thumbnail of the step's whole matrix with the drawn part outlined, what the
// windows hold, and buttons that move the key window. Clicking the thumbnail moves the windows
// there: its row becomes the query, the keys centre on its column.
import { t } from '../i18n/index.js';
import { overviewFigure } from '../figures/matrix.js';
import { movedKeys } from '../figures/steps.js';
import { releaseFigure, renderFigure } from './plot.js';

/**
 * @param {HTMLElement} root #stage-window, holding #stage-overview, #window-text, #window-keys-prev,
 *   #window-keys-next and #window-follow
 * @param {{onMove: (change: {query?: number, keys: number|null}) => void}} options
 */
export function createWindowNav(root, { onMove }) {
  const thumb = root.querySelector('#stage-overview');
  const text = root.querySelector('#window-text');
  const prev = root.querySelector('#window-keys-prev');
  const next = root.querySelector('#window-keys-next');
  const follow = root.querySelector('#window-follow');
  let shown = null; // {windows, overview, following}
  let bound = false;
  let drawn = null; // the overview the thumbnail shows

  /** Whether two overviews (figures/steps.js) draw the same thumbnail: same matrix, scale and windows. */
  const sameWindow = (a, b) => (a === null ? b === null : b !== null && a.start === b.start && a.end === b.end);
  const sameOverview = (a, b) => a !== null && b !== null && a.z === b.z && a.kind === b.kind && a.range === b.range
    && a.query === b.query && sameWindow(a.rows, b.rows) && sameWindow(a.cols, b.cols);

  prev.addEventListener('click', () => shown && onMove({ keys: movedKeys(shown.windows, -1) }));
  next.addEventListener('click', () => shown && onMove({ keys: movedKeys(shown.windows, 1) }));
  follow.addEventListener('click', () => shown && onMove({ keys: null }));

  function onClick(event) {
    const point = event && event.points && event.points[0];
    if (!shown || !point || !shown.overview) return;
    const { size, rows, keys } = shown.windows;
    const query = Math.min(rows.n - 1, Math.max(0, Math.round(point.y)));
    if (!shown.overview.cols) return onMove({ query, keys: shown.following ? null : keys.start });
    const key = Math.min(keys.n - 1, Math.max(0, Math.round(point.x)));
    return onMove({ query, keys: Math.min(keys.n - size, Math.max(0, key - Math.floor(size / 2))) });
  }

  /**
   * Show the windows of a drawn step: `spec` from figures/steps.js stepSpec; `following` says
   * whether the key window follows the query (no window chosen by the user).
   */
  async function render(spec, following) {
    const { windows, overview } = spec;
    const windowed = windows.rows.windowed || windows.keys.windowed;
    root.hidden = !windowed;
    shown = windowed ? { windows, overview, following } : null;
    if (!windowed) {
      releaseFigure(thumb);
      bound = false;
      drawn = null;
      return;
    }
    const { rows, keys } = windows;
    text.textContent = t(rows.n === keys.n ? 'walk.window.text' : 'walk.window.textCross', {
      q0: rows.start, q1: rows.end - 1, k0: keys.start, k1: keys.end - 1, n: rows.n, nq: rows.n, nk: keys.n,
    });
    root.dataset.rows = `${rows.start}-${rows.end - 1}`;
    root.dataset.keys = `${keys.start}-${keys.end - 1}`;
    prev.disabled = keys.start === 0;
    next.disabled = keys.end === keys.n;
    follow.disabled = following;
    if (overview) {
      thumb.hidden = false;
      if (!sameOverview(overview, drawn)) { // the next step often shows the same matrix (softmax, weighted sum)
        drawn = overview;
        await renderFigure(thumb, overviewFigure(overview), { modeBar: false });
      }
      if (!bound) {
        thumb.on('plotly_click', onClick);
        bound = true;
      }
    } else {
      thumb.hidden = true;
    }
  }

  return { render };
}
