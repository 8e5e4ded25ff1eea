// The run on screen of /iris (templates/iris.html): one training job followed through its event
// stream from its first epoch (a late client gets them all) until `done`, `cancelled` or `error`.
// Every epoch extends the loss and accuracy curves, redraws the watched test flower's two
// attention maps and moves the progress bar (throttled: see redraw); `done` draws the test split's
// confusion matrix. #results carries the phase as data-run (running, done, cancelled, error,
// lost), the job as data-job and the last epoch drawn as data-epoch; Train and Stop follow the
// phase, and Stop asks the server to end the job (its stream then says `cancelled`).
import { ApiError, irisEventsUrl, stopIrisTraining } from '../api.js';
import { accuracyFigure, attentionFigure, confusionFigure, lossAxis, lossFigure } from '../figures/iris.js';
import { lang, t } from '../i18n/index.js';
import { featureNames, flowerText, percent, refusal, speciesNames } from '../iris/words.js';
import { renderFigure } from './plot.js';

const seconds = new Intl.NumberFormat(lang === 'zh' ? 'zh-CN' : 'en', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const uniform = () => [0, 1, 2, 3].map(() => [0.25, 0.25, 0.25, 0.25]);
const FINISHED = ['done', 'cancelled']; // phases whose model can predict

/**
 * @typedef {object} Run
 * @property {string} job
 * @property {EventSource|null} source
 * @property {number} epochs
 * @property {number} watch the test flower its maps show
 * @property {number} last the last epoch received (a reconnected stream starts again at 0)
 * @property {object[]} pending epoch events not drawn yet
 * @property {object|null} latest the last epoch event drawn
 * @property {Promise<unknown>} ready the empty figures are drawn
 * @property {'running'|'done'|'cancelled'|'error'|'lost'} phase
 */

/**
 * @param {{status: {busy: (on: boolean) => void, info: (message?: string) => void,
 *   problem: (message: string) => void}, data: () => object, onPhase?: (phase: string|null) => void}} options
 *   status: the page's status line; data: the data set (GET /api/v1/iris/data); onPhase runs
 *   whenever the phase changes (null: no run on screen)
 * @returns {{follow: (job: string, epochs: number, watch: number, url?: string) => Promise<void>,
 *   clear: (epochs: number, watch: number) => Promise<unknown>, job: string|null,
 *   phase: string|null, trained: string|null}} trained: the job on screen once its model can
 *   predict (done or cancelled), else null
 */
export function createIrisRun({ status, data, onPhase = () => {} }) {
  const $ = (id) => document.getElementById(id);
  const els = {
    results: $('results'),
    train: $('iris-train'),
    stop: $('iris-stop'),
    progress: $('iris-progress'),
    fill: $('iris-progress-fill'),
    progressText: $('iris-progress-text'),
    flower: $('iris-maps-flower'),
    final: $('iris-final'),
    loss: $('plot-loss'),
    lossLog: $('iris-loss-log'),
    accuracy: $('plot-accuracy'),
    confusion: $('plot-confusion'),
    confusionWait: $('iris-confusion-wait'),
  };
  const maps = [$('plot-head-0'), $('plot-head-1')];
  /** @type {Run|null} */
  let run = null;
  let frame = 0;

  function setPhase(phase) {
    run.phase = phase;
    els.results.dataset.run = phase;
    const running = phase === 'running';
    els.train.disabled = running;
    els.stop.disabled = !running;
    onPhase(phase);
  }

  function showProgress(epoch, epochs, elapsed) {
    const share = epochs > 0 ? epoch / epochs : 0;
    els.progress.setAttribute('aria-valuemax', String(epochs));
    els.progress.setAttribute('aria-valuenow', String(epoch));
    els.progress.dataset.percent = String(Math.round(100 * share));
    els.fill.style.width = `${(100 * share).toFixed(2)}%`;
    const text = t('iris.progress.text', { epoch, epochs, percent: Math.round(100 * share), seconds: seconds.format(elapsed) });
    els.progress.setAttribute('aria-valuetext', text);
    els.progressText.textContent = text;
  }

  const mapFigure = (matrix, head) => attentionFigure({ matrix, labels: featureNames(data()), head, height: 320 });

  /** Empty curves over the whole epoch axis, the maps of a flower not yet seen, no confusion matrix. */
  function drawEmpty(epochs, watch) {
    els.flower.textContent = t('iris.maps.flower', { flower: flowerText(data(), watch) });
    els.confusion.hidden = true;
    els.confusionWait.hidden = false;
    els.final.textContent = '';
    return Promise.all([
      renderFigure(els.loss, lossFigure({ epochs, log: els.lossLog.checked })),
      renderFigure(els.accuracy, accuracyFigure({ epochs })),
      ...maps.map((gd, h) => renderFigure(gd, mapFigure(uniform(), h), { modeBar: false })),
    ]);
  }

  /** Draw the epochs received since the last frame: extend the curves, redraw the maps and the bar. */
  function flush() {
    if (!run || !run.pending.length) return;
    const events = run.pending.splice(0);
    const x = events.map((e) => e.epoch);
    window.Plotly.extendTraces(els.loss, { x: [x], y: [events.map((e) => e.loss)] }, [0]);
    window.Plotly.extendTraces(els.accuracy, {
      x: [x, x],
      y: [events.map((e) => e.train_accuracy), events.map((e) => e.test_accuracy)],
    }, [0, 1]);
    const latest = events[events.length - 1];
    run.latest = latest;
    latest.attention.forEach((matrix, h) => {
      if (maps[h]) window.Plotly.restyle(maps[h], { z: [matrix] }, [0]);
    });
    showProgress(latest.epoch, latest.epochs ?? run.epochs, latest.seconds ?? 0);
    els.results.dataset.epoch = String(latest.epoch);
  }

  // Redraws run in animation frames, at most one a frame, and each waits twice as long as the last
  // one took: however fast the epochs come and however slow the machine draws, two thirds of the
  // main thread stay free for scrolling and for Stop. (Measured in headless Chromium, software
  // rendering, 2 cores shared with the training: one redraw of the curves and both maps took
  // 60–300 ms; a 2000-epoch run then kept a median frame of 16.7 ms.)
  let nextRedraw = 0;

  function redraw(now) {
    frame = 0;
    if (now < nextRedraw) {
      frame = window.requestAnimationFrame(redraw);
      return;
    }
    const start = performance.now();
    flush();
    const end = performance.now();
    nextRedraw = end + 2 * (end - start);
  }

  function schedule() {
    if (!frame) frame = window.requestAnimationFrame(redraw);
  }

  function cancelFrame() {
    if (frame) window.cancelAnimationFrame(frame);
    frame = 0;
  }

  function closeStream() {
    if (run && run.source) {
      run.source.close();
      run.source = null;
    }
  }

  /** The run has ended: draw what has arrived now and stop listening. */
  function end() {
    cancelFrame();
    flush();
    closeStream();
  }

  async function finished(done) {
    end();
    const correct = done.confusion.reduce((sum, row, i) => sum + row[i], 0);
    const total = done.confusion.flat().reduce((sum, n) => sum + n, 0);
    els.final.textContent = t('iris.final', {
      accuracy: percent(done.test_accuracy), correct, total, train: percent(done.train_accuracy ?? 0),
    });
    els.confusionWait.hidden = true;
    els.confusion.hidden = false;
    await renderFigure(els.confusion, confusionFigure({ confusion: done.confusion, classes: speciesNames(data()) }), { modeBar: false });
    showProgress(done.epochs ?? run.epochs, done.epochs ?? run.epochs, done.seconds ?? 0);
    setPhase('done');
    status.busy(false);
    status.info(t('iris.status.done', {
      epochs: done.epochs ?? run.epochs, accuracy: percent(done.test_accuracy), seconds: seconds.format(done.seconds ?? 0),
    }));
  }

  function cancelled(event) {
    end();
    setPhase('cancelled');
    status.busy(false);
    status.info(t('iris.status.cancelled', { epoch: event.epoch ?? run.last, epochs: run.epochs }));
  }

  const parse = (event) => {
    try {
      return JSON.parse(event.data);
    } catch {
      return null;
    }
  };

  /** Follow the events of `job` from its first epoch, at `url` (the server's name for its stream). */
  async function follow(job, epochs, watch, url = irisEventsUrl(job)) {
    closeStream();
    cancelFrame();
    run = { job, source: null, epochs, watch, last: -1, pending: [], latest: null, ready: null, phase: 'running' };
    const mine = run;
    els.results.dataset.job = job;
    els.results.dataset.epoch = '';
    setPhase('running');
    status.busy(true);
    status.info('');
    showProgress(0, epochs, 0);
    mine.ready = drawEmpty(epochs, watch);
    await mine.ready;
    if (run !== mine) return;

    const source = new EventSource(url);
    mine.source = source;
    source.addEventListener('epoch', (event) => {
      const epoch = parse(event);
      if (run !== mine || !epoch || epoch.epoch <= mine.last) return; // a reconnected stream repeats the epochs
      mine.last = epoch.epoch;
      if (epoch.epochs && epoch.epochs !== mine.epochs) mine.epochs = epoch.epochs;
      if (mine.phase !== 'running') return;
      status.info('');
      mine.pending.push(epoch);
      schedule();
    });
    source.addEventListener('done', (event) => {
      const done = parse(event);
      if (run === mine && done) finished(done);
    });
    source.addEventListener('cancelled', (event) => {
      if (run === mine) cancelled(parse(event) ?? {});
    });
    source.addEventListener('error', (event) => {
      if (run !== mine) return;
      if (typeof event.data === 'string') { // the server's own `error` event: the training failed
        end();
        setPhase('error');
        const detail = parse(event)?.detail;
        status.problem(detail ? t('iris.error.failed', { detail }) : t('iris.error.failedQuiet'));
        return;
      }
      if (source.readyState === EventSource.CLOSED) { // the server refused the stream: no such job any more
        end();
        setPhase('lost');
        status.problem(mine.last < 0 ? t('iris.error.gone') : t('iris.error.lost', { epoch: mine.last }));
      } else {
        status.info(t('iris.status.reconnecting'));
      }
    });
  }

  /** No run on screen: ready to train `epochs` epochs watching test flower `watch`. */
  function clear(epochs, watch) {
    closeStream();
    run = null;
    delete els.results.dataset.run;
    delete els.results.dataset.job;
    els.train.disabled = false;
    els.stop.disabled = true;
    onPhase(null);
    status.busy(false);
    status.info(t('iris.status.ready'));
    showProgress(0, epochs, 0);
    return drawEmpty(epochs, watch);
  }

  els.lossLog.addEventListener('change', (event) => {
    window.Plotly.relayout(els.loss, lossAxis(event.target.checked));
  });

  els.stop.addEventListener('click', async () => {
    if (!run || run.phase !== 'running') return;
    els.stop.disabled = true;
    try {
      await stopIrisTraining(run.job);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) status.problem(refusal(error, data()));
    } // the stream says `cancelled` (or `done`, when the last epoch came first)
  });

  return {
    follow,
    clear,
    get job() {
      return run?.job ?? null;
    },
    get phase() {
      return run?.phase ?? null;
    },
    get trained() {
      return run && FINISHED.includes(run.phase) ? run.job : null;
    },
  };
}
