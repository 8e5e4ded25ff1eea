// Linear attention and FlashAttention (chapter 12), the two answers to attention's N × N cost, on head 0
// of the notes' worked example: POST /api/v1/toy (softmax attention, and variant "linear", whose weights
// are φ(q)·φ(k) / Σ_j φ(q)·φ(k_j) with φ(x) = elu(x) + 1) and POST /api/v1/flash (FlashAttention's forward
// in Br × Bc tiles). Linear attention's fixed-size state φ(K)ᵀV and Σφ(K) are computed here from the
// head's q, k and v (learn/measures.js) and its output from them is compared with the API's N × N route.
import { getFlash, getToy } from '../api.js';
import { t } from '../i18n/index.js';
import { Lru } from '../page.js';
import { el, fixed, toggles } from './dom.js';
import { linearAttention, maxAbsDiff, tileOrder } from './measures.js';
import { labels, matrixPanels } from './panel.js';

export const BLOCKS = Object.freeze([1, 2, 4]);
const answers = new Lru(8);
const tiny = (x) => (x === 0 ? '0' : x.toExponential(1));

export async function fastView(root, state, ctx) {
  const block = BLOCKS.includes(state.block) ? state.block : 2;
  const load = (name, body, get) => answers.load(`${name} ${JSON.stringify(body)}`, () => get(body));
  const [soft, linear, flash] = await Promise.all([
    load('toy', {}, getToy), load('toy', { variant: 'linear' }, getToy), load('flash', { head: 0, block_rows: block, block_cols: block }, getFlash),
  ]);
  if (!ctx.current()) return;
  const head = 0;
  const { q, k, v } = Object.fromEntries(['q', 'k', 'v'].map((m) => [m, linear.steps.split[m][head]]));
  const cheap = linearAttention(q, k, v);
  const linearWeights = linear.steps.softmax[head];
  const softWeights = soft.steps.softmax[head];
  const linearOut = linear.steps.weighted_sum[head];
  const dims = (prefix, n) => labels(prefix, n);

  const linearPanels = el('div', { class: 'learn-matrices' });
  const flashPanels = el('div', { class: 'learn-matrices' });
  root.replaceChildren(
    el('h2', { text: t('learn.fast.linearHeading') }),
    linearPanels,
    el('h2', { text: t('learn.fast.flashHeading') }),
    toggles('learn.fast.block', BLOCKS.map((b) => [b, `Br = Bc = ${b}`]), block, (b) => ctx.navigate({ block: b }), { id: 'learn-blocks' }),
    flashPanels,
  );
  await matrixPanels(linearPanels, [
    { id: 'learn-fast-softmax', titleKey: 'learn.fast.softmax', z: softWeights, kind: 'weights', range: 1 },
    { id: 'learn-fast-linear', titleKey: 'learn.fast.linear', z: linearWeights, kind: 'weights', range: 1 },
    { id: 'learn-fast-state', titleKey: 'learn.fast.state', z: cheap.state, rows: dims('d', cheap.state.length), cols: dims('e', cheap.state[0].length), colName: 'd' },
    { id: 'learn-fast-sum', titleKey: 'learn.fast.sum', z: [cheap.normaliser], rows: ['Σ'], cols: dims('d', cheap.normaliser.length), colName: 'd' },
  ], ctx.current);
  const rows = flash.q.length;
  const cols = flash.k.length;
  await matrixPanels(flashPanels, [
    {
      id: 'learn-fast-tiles', titleKey: 'learn.fast.tiles', values: { br: flash.block_rows, bc: flash.block_cols },
      z: tileOrder(flash.tiles, rows, cols), kind: 'weights', range: flash.tiles.length,
    },
    { id: 'learn-fast-output', titleKey: 'learn.fast.output', z: flash.output, cols: dims('d', flash.output[0].length), colName: 'd' },
  ], ctx.current);
  if (!ctx.current()) return;
  ctx.caption('learn.fast.caption', {
    dk: cheap.state.length, dv: cheap.state[0].length, linDiff: tiny(maxAbsDiff(cheap.output, linearOut)),
    weightsDiff: fixed(maxAbsDiff(linearWeights, softWeights)), vsSoftmax: fixed(maxAbsDiff(linearOut, soft.steps.weighted_sum[head])),
    br: flash.block_rows, bc: flash.block_cols, tiles: flash.tiles.length, held: flash.block_rows * flash.block_cols,
    full: rows * cols, flashDiff: tiny(flash.max_abs_diff),
  });
  ctx.links({ block });
}
