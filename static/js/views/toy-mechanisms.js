// Two views under the toy's walkthrough, each opened by its button (and kept in the URL):
// * compare: the chosen head's weights for every variant on the same input, side by side;
// * shuffle: the permutation check — shuffle the tokens and see whether the output rows only
//   shuffle the same way (self-attention without positions) or change (with positions).
// Both ask POST /api/v1/toy for variants of the page's own request through `load` (cached).
import { matrixFigure } from '../figures/matrix.js';
import { t } from '../i18n/index.js';
import { renderFigure } from './plot.js';

export const VARIANTS = Object.freeze(['scaled_dot', 'dot', 'additive', 'hard', 'sample', 'gumbel', 'linear', 'probsparse', 'general', 'cosine']);
export const SHUFFLE_SEED = 7;
const SAME = 1e-9; // float64 sums in another order differ by ~1e-15; a real change is far larger

/** A fixed shuffle of 0..n-1 (mulberry32 seeded with `seed`), never the identity when n > 1. */
export function shuffle(n, seed = SHUFFLE_SEED) {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x ^= x + Math.imul(x ^ (x >>> 7), 61 | x);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  if (n > 1 && order.every((v, i) => v === i)) order.push(order.shift()); // a shuffle that moves something
  return order;
}

/** The request with its query rows in `queryOrder` and its key/value rows in `keyOrder`. */
export function shuffledRequest(body, queryOrder, keyOrder) {
  const hidden = new Set(body.hidden_keys ?? []);
  const out = {
    ...body,
    queries: queryOrder.map((i) => body.queries[i]),
    keys: keyOrder.map((j) => body.keys[j]),
    values: keyOrder.map((j) => body.values[j]),
  };
  if (body.hidden_keys) out.hidden_keys = keyOrder.flatMap((j, position) => (hidden.has(j) ? [position] : []));
  return out;
}

const rowLabels = (n, prefix) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

function plot(container, figure) {
  const element = document.createElement('div');
  element.className = 'mechanism-plot';
  container.append(element);
  return { element, drawn: renderFigure(element, figure, { modeBar: false }) };
}

/**
 * @param {{compare: HTMLElement, shuffle: HTMLElement}} roots the two panels (templates/toy.html)
 * @param {{load: (body: object) => Promise<object>}} options load: the /toy answer to a request
 */
export function createMechanismViews(roots, { load }) {
  const compareGrid = roots.compare.querySelector('#compare-grid');
  const shuffleGrid = roots.shuffle.querySelector('#shuffle-grid');
  const shuffleOrder = roots.shuffle.querySelector('#shuffle-order');
  const shuffleResult = roots.shuffle.querySelector('#shuffle-result');

  /** Every variant's weights of `head` for the request `body` (its variant and straight-through aside). */
  async function drawCompare(body, head) {
    const { straight_through: _, factor, scale, ...rest } = body; // factor: probsparse's only, scale: cosine's only
    const own = { probsparse: factor === undefined ? {} : { factor }, cosine: scale === undefined ? {} : { scale } };
    // linear attention takes no ALiBi bias (it would make its kernel scores negative): left out then
    // nor ProbSparse where its rules refuse the setup: hidden keys, under 2 queries or keys, causal with L ≠ S
    const [rows, keys] = [rest.queries?.length ?? 0, (rest.keys ?? rest.queries)?.length ?? 0];
    const sparseRefused = rest.hidden_keys?.length || Math.min(rows, keys) < 2 || (rest.causal && rows !== keys);
    const negativeDelta = [rest.delta ?? 0].flat().some((x) => x < 0); // linear's kernel scores must stay positive
    const shown = VARIANTS.filter((variant) => !(variant === 'linear' && (rest.positions === 'alibi' || negativeDelta))
      && !(variant === 'probsparse' && sparseRefused));
    const answers = await Promise.all(shown.map((variant) => load({ ...rest, ...(own[variant] ?? {}), variant })));
    compareGrid.replaceChildren();
    const drawing = answers.map((toy, index) => {
      const variant = shown[index];
      const cell = document.createElement('figure');
      cell.className = 'compare-cell';
      cell.dataset.variant = variant;
      const title = document.createElement('figcaption');
      const name = document.createElement('strong');
      name.textContent = t(`toy.variant.${variant}`);
      const line = document.createElement('span');
      line.textContent = t(`toy.compare.${variant}`);
      title.append(name, ' ', line);
      cell.append(title);
      compareGrid.append(cell);
      const z = toy.steps.softmax[Math.min(head, toy.steps.softmax.length - 1)];
      const figure = matrixFigure({
        z, kind: 'weights', range: 1, rowLabels: rowLabels(z.length, 'q'), rowName: null,
        colLabels: rowLabels(z[0].length, 'k'), colName: null, cellPx: 26, colorbar: false,
      });
      const { element, drawn } = plot(cell, figure);
      element.dataset.matrix = `compare-${variant}`;
      return drawn;
    });
    await Promise.all(drawing);
  }

  /**
   * The permutation check for `body`: the output of the shuffled input against the shuffled output.
   * @returns {Promise<number>} the largest difference
   */
  async function drawShuffle(body) {
    const queryOrder = shuffle(body.queries.length);
    const keyOrder = body.keys.length === body.queries.length ? queryOrder : shuffle(body.keys.length, SHUFFLE_SEED + 1);
    const [original, shuffled] = await Promise.all([load(body), load(shuffledRequest(body, queryOrder, keyOrder))]);
    const expected = queryOrder.map((i) => original.steps.output[i]); // the output rows, shuffled the same way
    const got = shuffled.steps.output;
    const diff = Math.max(...got.flatMap((row, i) => row.map((v, d) => Math.abs(v - expected[i][d]))));

    shuffleOrder.textContent = `${t('toy.perm.queries')} [${queryOrder.join(', ')}] · ${t('toy.perm.keys')} `
      + `[${keyOrder.join(', ')}] ${t('toy.perm.seed', { seed: SHUFFLE_SEED })}`;
    const same = diff < SAME;
    shuffleResult.textContent = `${same ? '✓' : '✗'} ${t(same ? 'toy.perm.same' : 'toy.perm.differs', {
      diff: diff.toExponential(1), positions: t(`toy.positions.${original.positions ?? 'none'}`),
    })}`;
    shuffleResult.classList.toggle('is-same', same);
    shuffleResult.dataset.diff = String(diff);

    shuffleGrid.replaceChildren();
    const labels = queryOrder.map((i) => `q${i}`);
    const range = Math.max(1e-12, ...expected.flat().map(Math.abs), ...got.flat().map(Math.abs));
    const drawing = [[expected, 'toy.perm.originalOut', 'shuffle-expected'], [got, 'toy.perm.shuffledOut', 'shuffle-got']]
      .map(([z, key, id]) => {
        const cell = document.createElement('figure');
        cell.className = 'compare-cell';
        const title = document.createElement('figcaption');
        title.textContent = t(key);
        cell.append(title);
        shuffleGrid.append(cell);
        const { element, drawn } = plot(cell, matrixFigure({ z, range, rowLabels: labels, rowName: null, cellPx: 26 }));
        element.dataset.matrix = id;
        return drawn;
      });
    await Promise.all(drawing);
    return diff;
  }

  return { drawCompare, drawShuffle };
}
