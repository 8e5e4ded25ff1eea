// The Transformer block (the chapter after linear attention and FlashAttention): the notes' line
// x → self-attention → + → LayerNorm → MLP → + → LayerNorm → y drawn with MiniLM's real numbers for one
// token of the learner's sentence: ‖·‖ of its vector after each part (POST /api/v1/trace's `block`,
// figures/block.js flowNorms), in the model's order. The link opens /steps at the block's first step.
import { getTraceCompact } from '../api.js';
import { tokenLabel } from '../figures/axes.js';
import { flowNorms, num, walkSteps } from '../figures/block.js';
import { fromTrace } from '../figures/steps.js';
import { t } from '../i18n/index.js';
import { loadModels, Lru, modelOf, range } from '../page.js';
import { fillChip } from '../views/tokens.js';
import { choice, el, field } from './dom.js';

const traces = new Lru(4);

/** The block's first own step in the walk of /steps: the first one after the attention's output. */
export function firstBlockStep(block) {
  const walk = walkSteps(block);
  return walk[walk.indexOf('output') + 1] ?? 'output';
}

export async function blockView(root, state, ctx) {
  await loadModels();
  const model = modelOf(null);
  const layer = Math.min(state.layer, model.n_layers - 1);
  const body = { text: state.text, model: null, layer, head: 0 };
  const trace = await traces.load(JSON.stringify(body), () => getTraceCompact(body));
  if (!ctx.current()) return;
  const query = Math.min(state.query, trace.tokens.length - 1);
  const T = { ...fromTrace(trace), block: trace.block };
  const flow = flowNorms(T, query);
  const labels = trace.tokens.map(tokenLabel);

  const pickers = el('div', { class: 'learn-controls' }, [
    field('learn-layer', 'learn.layer', choice('learn-layer', range(model.n_layers).map((i) => [i, String(i)]), layer,
      (v) => ctx.navigate({ layer: Number(v) }))),
  ]);
  const chips = el('div', { class: 'chips learn-chips', role: 'group', 'aria-label': t('learn.query') },
    trace.tokens.map((token, i) => {
      const chip = fillChip(el('button', { type: 'button', 'aria-pressed': String(i === query), dataset: { index: String(i) } }), token, i);
      chip.addEventListener('click', () => ctx.navigate({ query: i }));
      return chip;
    }));
  const normName = trace.block.norm === 'rms' ? 'RMSNorm' : 'LayerNorm'; // ui-text: not UI (the norms' names)
  // the parts as the notes name them: x, self-attention, +, LayerNorm, MLP, +, LayerNorm (the final norm by its label)
  const name = (step) => {
    if (step === 'block_input') return 'x';
    if (step === 'attention') return t('learn.block.attentionBox');
    if (step.startsWith('add_')) return '+';
    if (step === 'mlp_out') return 'MLP';
    if (step === 'final_norm') return t('steps.block.label.final_norm');
    return normName;
  };
  const diagram = el('ol', { class: 'learn-block-flow', id: 'learn-block-flow', 'aria-label': t('learn.block.flow') },
    flow.map(({ step, norm }) => el('li', { dataset: { step, norm: String(norm) } }, [
      el('span', { class: 'learn-block-name', text: name(step) }),
      el('span', { class: 'learn-block-norm', text: `‖·‖ = ${num(norm)}` }),
    ])));
  root.replaceChildren(pickers, chips, diagram);

  const at = Object.fromEntries(flow.map(({ step, norm }) => [step, norm]));
  const out = at[trace.block.output_step];
  ctx.tokens(trace.tokens, model.id);
  const last = layer === model.n_layers - 1;
  ctx.caption(last ? 'learn.block.captionLast' : 'learn.block.caption', {
    token: labels[query], layer, input: num(at.block_input), attention: num(at.attention), mlp: num(at.mlp_out),
    output: num(out), next: layer + 1, dModel: trace.d_model, dff: trace.block.d_ff,
  }, ['token']);
  ctx.links({ layer, query, step: firstBlockStep(trace.block) });
}
