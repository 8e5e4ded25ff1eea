// A training job's event stream followed with EventSource, for the labs that train runs side by side
// (/seq2seq, /informer, /glimpse): each new `eval` (a reconnected stream repeats the earlier ones: they are
// skipped by their step), then how the run ended — `done` with its data, `cancelled`, the server's `error` with
// its detail, or `lost` (the server closed the stream: no such job any more). The page decides what each means.

const parse = (event) => {
  try {
    return JSON.parse(event.data);
  } catch {
    return null;
  }
};

/**
 * @param {string} url the job's events URL (api.js trainingEventsUrl)
 * @param {{onEval: (data: object) => void, onEnd: (phase: 'done'|'cancelled'|'error'|'lost', data: object|null) => void,
 *   onReconnect: () => void}} handlers
 * @returns {EventSource} closed by the end; the page closes it when it leaves the run before
 */
export function followJob(url, { onEval, onEnd, onReconnect }) {
  const source = new EventSource(url);
  let last = -1;
  const end = (phase, data = null) => {
    source.close();
    onEnd(phase, data);
  };
  source.addEventListener('eval', (event) => {
    const data = parse(event);
    if (!data || data.step <= last) return;
    last = data.step;
    onEval(data);
  });
  source.addEventListener('done', (event) => end('done', parse(event)));
  source.addEventListener('cancelled', () => end('cancelled'));
  source.addEventListener('error', (event) => {
    if (typeof event.data === 'string') end('error', parse(event)); // the server's own error event
    else if (source.readyState === EventSource.CLOSED) end('lost');
    else onReconnect();
  });
  return source;
}
