// Predict and the walkthrough of /iris (templates/iris.html): four typed measurements sent to the
// trained model on screen (POST /api/v1/iris/predict), its class probabilities and its two
// attention maps for that flower, then its attention layer step by step in the walkthrough of
// /toy, the four tokens named after the features. #iris-prediction carries data-predicted (the
// class index) and #iris-walkthrough data-drawn (the model's epoch) once drawn.
import { predictIris } from '../api.js';
import { attentionFigure, probabilitiesFigure } from '../figures/iris.js';
import { fromToy } from '../figures/steps.js';
import { t } from '../i18n/index.js';
import { featureNames, measurements, percent, refusal, speciesName } from '../iris/words.js';
import { createStatus, fillSelect } from '../page.js';
import { renderFigure } from './plot.js';
import { createWalkthrough } from './walkthrough.js';

const MAX_FEATURE = 100; // cm, the server's limit for a typed measurement

/**
 * @param {{data: () => object, trained: () => string|null, drawData: (typed: number[]) => Promise<unknown>}} options
 *   data: the data set (GET /api/v1/iris/data); trained: the job whose model predicts (null: none
 *   yet); drawData draws the data set with the typed flower marked
 * @returns {{predict: () => Promise<void>, fill: (row: number[]) => void, clear: () => void,
 *   enable: (on: boolean) => void, labelFields: () => void}}
 */
export function createIrisPredict({ data, trained, drawData }) {
  const $ = (id) => document.getElementById(id);
  const inputs = [0, 1, 2, 3].map((i) => $(`iris-f${i}`));
  const els = {
    form: $('iris-predict-form'),
    button: $('iris-predict'),
    prediction: $('iris-prediction'),
    predicted: $('iris-predicted'),
    probabilities: $('plot-probabilities'),
    walk: $('iris-walkthrough'),
    walkHint: $('iris-walk-hint'),
    head: $('head-select'),
    query: $('query-select'),
  };
  const maps = [$('plot-predict-head-0'), $('plot-predict-head-1')];
  const status = createStatus({ status: $('predict-status'), loading: $('predict-loading'), region: els.prediction });
  const walkthrough = createWalkthrough();
  let walkData = null;

  const walkSelection = () => ({ head: Number(els.head.value) || 0, query: Number(els.query.value) || 0 });

  /** The four typed measurements, or the index of the first one that is not a number from 0 to 100. */
  function readFeatures() {
    const values = inputs.map((input) => (input.value.trim() === '' ? Number.NaN : Number(input.value)));
    const bad = values.findIndex((v) => !Number.isFinite(v) || v < 0 || v > MAX_FEATURE);
    inputs.forEach((input, i) => input.setAttribute('aria-invalid', i === bad ? 'true' : 'false'));
    return bad < 0 ? { values } : { bad };
  }

  async function predict() {
    const job = trained();
    if (job === null) return;
    const { values, bad } = readFeatures();
    if (values === undefined) {
      status.problem(t('iris.error.feature', { feature: featureNames(data())[bad], max: MAX_FEATURE }));
      inputs[bad].focus();
      return;
    }
    status.busy(true);
    status.info('');
    let answer;
    try {
      answer = await predictIris({ job, features: values });
    } catch (error) {
      status.problem(refusal(error, data()));
      return;
    }
    if (trained() !== job) return;
    status.busy(false);
    await show(answer, values);
  }

  async function show(answer, values) {
    const names = answer.classes ?? data().classes;
    const classes = names.map(speciesName);
    const predicted = typeof answer.predicted === 'number' ? answer.predicted : names.indexOf(answer.predicted);
    els.prediction.hidden = false;
    els.prediction.dataset.predicted = String(predicted);
    els.predicted.textContent = t('iris.predicted', {
      species: classes[predicted], probability: percent(answer.probabilities[predicted]), epoch: answer.epoch,
    });
    status.info(t('iris.predict.done', { values: measurements(values), epoch: answer.epoch }));
    const labels = featureNames(data());
    const weights = answer.trace.steps.softmax; // (H, 4, 4)
    await Promise.all([
      renderFigure(els.probabilities, probabilitiesFigure({ probabilities: answer.probabilities, classes, predicted }), { modeBar: false }),
      ...maps.map((gd, h) => renderFigure(gd, attentionFigure({ matrix: weights[h], labels, head: h, height: 320 }), { modeBar: false })),
      drawData(values),
    ]);
    // The trained attention layer for this flower, step by step: its four tokens named after the features.
    walkData = { ...fromToy(answer.trace), queryLabels: labels, keyLabels: labels };
    els.walk.hidden = false;
    els.walkHint.textContent = t('iris.walk.hint', { values: measurements(values), epoch: answer.epoch });
    const selection = walkSelection();
    fillSelect(els.head, walkData.heads.map((h) => t('iris.head', { head: h })), Math.min(selection.head, walkData.nHeads - 1));
    fillSelect(els.query, labels, selection.query);
    await walkthrough.show(walkData, walkSelection());
    els.walk.dataset.drawn = String(answer.epoch);
  }

  for (const input of inputs) input.setAttribute('max', String(MAX_FEATURE));
  els.head.addEventListener('change', () => walkData && walkthrough.show(walkData, walkSelection()));
  els.query.addEventListener('change', () => walkData && walkthrough.show(walkData, walkSelection()));
  els.form.addEventListener('submit', (event) => {
    event.preventDefault();
    predict();
  });

  return {
    predict,
    /** Type a flower's four measurements into the form. */
    fill(row) {
      row.forEach((value, i) => {
        inputs[i].value = String(value);
      });
    },
    /** Hide the last prediction and its walkthrough. */
    clear() {
      els.prediction.hidden = true;
      els.walk.hidden = true;
      walkData = null;
      status.info('');
    },
    enable(on) {
      els.button.disabled = !on;
    },
    /** Name the four fields after the data set's features. */
    labelFields() {
      featureNames(data()).forEach((name, i) => {
        $(`iris-f${i}-label`).textContent = t('iris.predict.field', { feature: name });
      });
    },
  };
}
