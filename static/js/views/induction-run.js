// The run on screen of /induction (templates/induction.html): one training job of the induction-head lab
// followed through its event stream from its first evaluation (a late client gets them all) until `done`,
// `cancelled` or `error`. Every `eval` extends the two loss curves and the heads' score curves, redraws the
// watched sequence's maps (every head small, one head large) and restates the circuit from the new numbers;
// the drop is marked once the repeated half's loss falls below half of ln(vocab). #results carries the phase
// as data-run, the job as data-job and the last step drawn as data-step. Redraws are throttled as on /iris.
import { ApiError, INDUCTION_TRAIN, stopTraining, trainingEventsUrl } from '../api.js';
import { dropMarks, lossFigure, mapFigure, scoresFigure } from '../figures/induction.js';
import { attentionPixels } from '../figures/colormap.js';
import { lang, t } from '../i18n/index.js';
import { circuitOf, dropOf, evidenceOf, SCORE_GOAL, uniformLoss } from '../induction/circuit.js';
import { renderFigure } from './plot.js';

const seconds = new Intl.NumberFormat(lang === 'zh' ? 'zh-CN' : 'en', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
export const weight = (value) => value.toFixed(2);
const head = ({ layer, head: h }) => t('induction.headName', { layer, head: h });

/**
 * @param {{status: object, refusal: (error: unknown) => string}} options status: the page's status line
 * @returns {{follow: (job: string, settings: object, url?: string) => Promise<void>, clear: (settings: object) =>
 *   Promise<unknown>, job: string|null, phase: string|null}}
 */
export function createInductionRun({ status, refusal }) {
  const $ = (id) => document.getElementById(id);
  const els = {
    results: $('results'), train: $('induction-train'), stop: $('induction-stop'), progress: $('induction-progress'),
    fill: $('induction-progress-fill'), progressText: $('induction-progress-text'), loss: $('plot-loss'),
    lossHint: $('induction-loss-hint'), drop: $('induction-drop'), previous: $('plot-previous'),
    induction: $('plot-induction'), verdict: $('induction-verdict'), evidence: $('induction-evidence'),
    mapsHint: $('induction-maps-hint'), sequence: $('induction-sequence'), maps: $('induction-maps'),
  };
  let run = null;
  let frame = 0;
  let nextRedraw = 0;

  function setPhase(phase) {
    run.phase = phase;
    els.results.dataset.run = phase;
    els.train.disabled = phase === 'running';
    els.stop.disabled = phase !== 'running';
  }

  function showProgress(step, steps, elapsed) {
    const share = steps > 0 ? step / steps : 0;
    els.progress.setAttribute('aria-valuemax', String(steps));
    els.progress.setAttribute('aria-valuenow', String(step));
    els.fill.style.width = `${(100 * share).toFixed(2)}%`;
    const text = t('induction.progress.text', { step, steps, percent: Math.round(100 * share), seconds: seconds.format(elapsed) });
    els.progress.setAttribute('aria-valuetext', text);
    els.progressText.textContent = text;
  }

  /** The grid of small maps, one canvas per head (T × T pixels, scaled up), and the chosen head's large map. */
  function buildMaps({ layers, heads }) {
    const grid = document.createElement('div');
    grid.className = 'induction-thumbs';
    grid.style.setProperty('--heads', String(heads));
    for (let layer = 0; layer < layers; layer += 1) {
      for (let h = 0; h < heads; h += 1) {
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'induction-thumb';
        button.dataset.layer = String(layer);
        button.dataset.head = String(h);
        button.setAttribute('aria-pressed', 'false');
        const name = document.createElement('span');
        name.className = 'induction-thumb-name';
        name.textContent = head({ layer, head: h });
        const role = document.createElement('span');
        role.className = 'induction-thumb-role';
        button.append(document.createElement('canvas'), name, role);
        button.addEventListener('click', () => choose(layer, h));
        grid.append(button);
      }
    }
    const large = document.createElement('div');
    large.id = 'plot-map';
    large.className = 'induction-map';
    els.maps.replaceChildren(grid, large);
  }

  function choose(layer, h) {
    if (!run) return;
    run.chosen = { layer, head: h, user: true };
    if (run.latest) drawMaps(run.latest);
  }

  function drawMaps(event) {
    const circuit = circuitOf(event);
    if (!run.chosen.user && circuit) run.chosen = { ...circuit.induction, user: false };
    const { layer, head: h } = run.chosen;
    const n = event.tokens.length;
    for (const button of els.maps.querySelectorAll('.induction-thumb')) {
      const l = Number(button.dataset.layer);
      const k = Number(button.dataset.head);
      const canvas = button.querySelector('canvas');
      canvas.width = n;
      canvas.height = n;
      canvas.getContext('2d').putImageData(new ImageData(attentionPixels(event.maps[l][k], 1), n, n), 0, 0);
      button.setAttribute('aria-pressed', String(l === layer && k === h));
      const roles = []; // named only when the head scores at least the lab's goal
      if (event.previous_token[l][k] >= SCORE_GOAL) roles.push(t('induction.role.previous'));
      if (l > 0 && event.induction[l][k] >= SCORE_GOAL) roles.push(t('induction.role.induction'));
      button.querySelector('.induction-thumb-role').textContent = roles.join(' · ');
    }
    els.sequence.textContent = event.tokens.join(' ');
    return renderFigure($('plot-map'), mapFigure({ matrix: event.maps[layer][h], tokens: event.tokens, layer, head: h }));
  }

  /** The circuit's sentences from one eval's numbers (circuit.js): true of the maps drawn beside them. */
  function explain(event) {
    const circuit = circuitOf(event);
    els.evidence.replaceChildren();
    if (!circuit) {
      els.verdict.textContent = t('induction.verdict.oneLayer');
      return;
    }
    const { previous, induction, formed } = circuit;
    els.verdict.textContent = t(formed ? 'induction.verdict.formed' : 'induction.verdict.notYet', {
      goal: weight(SCORE_GOAL), step: event.step, previous: weight(previous.score), induction: weight(induction.score),
    });
    const e = evidenceOf(event, circuit);
    const where = (side, row) => (row.peak.at === side ? t('induction.evidence.largest')
      : t('induction.evidence.elsewhere', { position: row.peak.at, weight: weight(row.peak.weight) }));
    const lines = [
      t('induction.evidence.previousHead', { head: head(previous), score: weight(previous.score) }),
      t('induction.evidence.inductionHead', { head: head(induction), score: weight(induction.score) }),
      t('induction.evidence.step1', {
        head: head(previous), next: e.next, following: e.following, j: e.j, token: e.token,
        weight: weight(e.previous.weight), where: where(e.j, e.previous),
      }),
      t('induction.evidence.step2', {
        head: head(induction), q: e.q, token: e.token, next: e.next, following: e.following,
        weight: weight(e.induction.weight), where: where(e.next, e.induction),
      }),
    ];
    els.evidence.replaceChildren(...lines.map((text) => {
      const item = document.createElement('li');
      item.textContent = text;
      return item;
    }));
  }

  function drawEmpty(settings) {
    const { steps, vocab, layers, heads, length } = settings;
    els.lossHint.textContent = t('induction.loss.hint', { vocab, ln: uniformLoss(vocab).toFixed(2), half: length / 2 });
    els.mapsHint.textContent = t('induction.maps.hint', { half: length / 2 });
    els.drop.textContent = '';
    els.verdict.textContent = '';
    els.evidence.replaceChildren();
    els.sequence.textContent = '';
    buildMaps(settings);
    return Promise.all([
      renderFigure(els.loss, lossFigure({ steps, vocab })),
      renderFigure(els.previous, scoresFigure({ steps, layers, heads, kind: 'previous' })),
      renderFigure(els.induction, scoresFigure({ steps, layers, heads, kind: 'induction' })),
    ]);
  }

  /** Draw the evaluations received since the last frame. */
  function flush() {
    if (!run || !run.pending.length) return;
    const events = run.pending.splice(0);
    run.evals.push(...events);
    const x = events.map((e) => e.step);
    window.Plotly.extendTraces(els.loss, { x: [x, x], y: [events.map((e) => e.loss_first_half), events.map((e) => e.loss_repeated_half)] }, [0, 1]);
    const { layers, heads } = run.settings;
    for (const [gd, field] of [[els.previous, 'previous_token'], [els.induction, 'induction']]) {
      const traces = [];
      const ys = [];
      for (let l = 0; l < layers; l += 1) {
        for (let h = 0; h < heads; h += 1) {
          traces.push(l * heads + h);
          ys.push(events.map((e) => e[field][l][h]));
        }
      }
      window.Plotly.extendTraces(gd, { x: traces.map(() => x), y: ys }, traces);
    }
    const drop = dropOf(run.evals, run.settings.vocab);
    if (drop && run.drop === null) {
      run.drop = drop.step;
      window.Plotly.relayout(els.loss, { shapes: [...els.loss.layout.shapes, ...dropMarks(drop.step).shapes],
        annotations: [...els.loss.layout.annotations, ...dropMarks(drop.step).annotations] });
    }
    els.drop.textContent = drop ? t('induction.loss.drop', { step: drop.step, loss: drop.loss_repeated_half.toFixed(2),
      threshold: (uniformLoss(run.settings.vocab) / 2).toFixed(2) }) : t('induction.loss.noDrop', { threshold: (uniformLoss(run.settings.vocab) / 2).toFixed(2) });
    const latest = events[events.length - 1];
    run.latest = latest;
    explain(latest);
    drawMaps(latest);
    showProgress(latest.step, latest.steps, latest.seconds);
    els.results.dataset.step = String(latest.step);
  }

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

  const schedule = () => {
    if (!frame) frame = window.requestAnimationFrame(redraw);
  };

  function closeStream() {
    if (frame) window.cancelAnimationFrame(frame);
    frame = 0;
    if (run && run.source) {
      run.source.close();
      run.source = null;
    }
  }

  function end(phase) {
    closeStream();
    flush();
    setPhase(phase);
    status.busy(false);
  }

  const parse = (event) => {
    try {
      return JSON.parse(event.data);
    } catch {
      return null;
    }
  };

  async function follow(job, settings, url = trainingEventsUrl(INDUCTION_TRAIN, job)) {
    closeStream();
    run = { job, settings, source: null, last: -1, pending: [], evals: [], latest: null, drop: null, phase: 'running', chosen: { layer: 1, head: 0, user: false } };
    const mine = run;
    els.results.dataset.job = job;
    els.results.dataset.step = '';
    setPhase('running');
    status.busy(true);
    status.info('');
    showProgress(0, settings.steps, 0);
    await drawEmpty(settings);
    if (run !== mine) return;
    const source = new EventSource(url);
    mine.source = source;
    source.addEventListener('eval', (event) => {
      const data = parse(event);
      if (run !== mine || !data || data.step <= mine.last || mine.phase !== 'running') return; // a reconnected stream repeats
      mine.last = data.step;
      status.info('');
      mine.pending.push(data);
      schedule();
    });
    source.addEventListener('done', (event) => {
      if (run !== mine) return;
      const done = parse(event) ?? {};
      end('done');
      const last = mine.latest;
      status.info(t('induction.status.done', {
        steps: done.steps ?? settings.steps, seconds: seconds.format(done.seconds ?? 0),
        loss: last ? last.loss_repeated_half.toFixed(2) : '–', first: last ? last.loss_first_half.toFixed(2) : '–',
      }));
    });
    source.addEventListener('cancelled', (event) => {
      if (run !== mine) return;
      end('cancelled');
      status.info(t('induction.status.cancelled', { step: parse(event)?.step ?? mine.last, steps: settings.steps }));
    });
    source.addEventListener('error', (event) => {
      if (run !== mine) return;
      if (typeof event.data === 'string') { // the server's own `error` event: the training failed
        end('error');
        const detail = parse(event)?.detail;
        status.problem(detail ? t('induction.error.failed', { detail }) : t('induction.error.failedQuiet'));
      } else if (source.readyState === EventSource.CLOSED) { // the server refused the stream: no such job any more
        end('lost');
        status.problem(mine.last < 0 ? t('induction.error.gone') : t('induction.error.lost', { step: mine.last }));
      } else {
        status.info(t('induction.status.reconnecting'));
      }
    });
  }

  function clear(settings) {
    closeStream();
    run = null;
    delete els.results.dataset.run;
    delete els.results.dataset.job;
    els.train.disabled = false;
    els.stop.disabled = true;
    status.busy(false);
    status.info(t('induction.status.ready'));
    showProgress(0, settings.steps, 0);
    return drawEmpty(settings).then(() => {
      els.verdict.textContent = t('induction.verdict.waiting');
    });
  }

  els.stop.addEventListener('click', async () => {
    if (!run || run.phase !== 'running') return;
    els.stop.disabled = true;
    try {
      await stopTraining(INDUCTION_TRAIN, run.job);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) status.problem(refusal(error));
    } // the stream says `cancelled` (or `done`, when the last step came first)
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
  };
}
