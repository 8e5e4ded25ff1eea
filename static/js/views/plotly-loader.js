// plotly.js (4.8 MB) on demand: a page that draws something before its first Plotly figure (the
// explorer's grid is canvases) adds the script when it needs it, so that parsing Plotly never
// holds up what is drawn first. The script comes from this server (CSP script-src 'self').
import { ApiError } from '../api.js';

const SRC = '/static/vendor/plotly.min.js';
let loading = null;

/**
 * Resolves to window.Plotly once plotly.js has run; adds its <script> on the first call only.
 * Rejects with an ApiError (the server could not be reached) when the script does not load.
 * @returns {Promise<object>}
 */
export function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!loading) {
    loading = new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = SRC;
      script.async = true;
      script.addEventListener('load', () => resolve(window.Plotly));
      script.addEventListener('error', () => {
        loading = null; // a later call tries again
        script.remove();
        reject(new ApiError(0, 'unreachable'));
      });
      document.head.append(script);
    });
  }
  return loading;
}

/** Starts loading plotly.js once the page is idle (after what is on screen has been painted). */
export function preloadPlotly() {
  const start = () => loadPlotly().catch(() => {}); // a failure is reported by the call that needs Plotly
  if ('requestIdleCallback' in window) window.requestIdleCallback(start, { timeout: 500 });
  else setTimeout(start, 0);
}
