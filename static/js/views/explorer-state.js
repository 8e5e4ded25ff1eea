// The explorer's analysis choices in its URL, beside text, pair, model, layer, head and query:
//   kind=mean|rollout|contribution   what the large map shows (absent: attention weight)
//   focus=I                          a focused token: its row and column highlighted everywhere
//   words=1, specials=hide           word view, special tokens hidden (large map; rows renormalised)
//   colour=METRIC                    the grid coloured by a head metric (/api/v1/metrics)
//   scale=shared, gamma=G            one colour scale for all heads; colour of (v / max)^G
//   edit=L, edit_heads=1,5, edit_t=T, edit_hide=2,3, edit_ablate=1   a what-if edit of layer L
//   edit_kind=probsparse, edit_c=C   that edit is Informer's ProbSparse with the factor c (no t, hide or ablate)
//   diff=1                           with an edit: the large map shows edited − unedited
// No DOM here: read(params) -> choices, write(choices, params).

export const KINDS = Object.freeze(['weight', 'mean', 'rollout', 'contribution']);
export const GAMMAS = Object.freeze([1, 0.5, 0.25]);
export const METRICS = Object.freeze([
  'entropy', 'distance', 'to_cls', 'to_sep', 'to_self', 'to_previous', 'to_next', 'to_punctuation', 'to_first',
]);

export const PROBSPARSE_FACTOR = 5; // the server's default c

const index = (value) => (value !== null && /^\d{1,6}$/.test(value) ? Number(value) : null);

/** "1,5,7" -> [1, 5, 7] (sorted, unique); anything else -> null. */
export function indexList(value) {
  if (value === null || !/^\d{1,6}(,\d{1,6})*$/.test(value)) return null;
  return [...new Set(value.split(',').map(Number))].sort((a, b) => a - b);
}

function readEdit(params) {
  const layer = index(params.get('edit'));
  if (layer === null) return null;
  const temperature = Number(params.get('edit_t'));
  const probsparse = params.get('edit_kind') === 'probsparse';
  const factor = index(params.get('edit_c'));
  return {
    layer,
    heads: indexList(params.get('edit_heads')), // null: every head of the layer
    kind: probsparse ? 'probsparse' : 'weights',
    factor: probsparse && factor !== null ? factor : PROBSPARSE_FACTOR,
    temperature: !probsparse && params.has('edit_t') && Number.isFinite(temperature) ? temperature : 1,
    hidden_keys: probsparse ? [] : indexList(params.get('edit_hide')) ?? [],
    ablate: !probsparse && params.get('edit_ablate') === '1',
  };
}

/** The analysis choices of a URL. */
export function readChoices(params) {
  const kind = params.get('kind');
  const gamma = Number(params.get('gamma'));
  const colour = params.get('colour');
  return {
    kind: KINDS.includes(kind) ? kind : 'weight',
    focus: index(params.get('focus')),
    words: params.get('words') === '1',
    hideSpecial: params.get('specials') === 'hide',
    colour: METRICS.includes(colour) ? colour : null,
    shared: params.get('scale') === 'shared',
    gamma: GAMMAS.includes(gamma) ? gamma : 1,
    edit: readEdit(params),
    diff: params.get('diff') === '1',
  };
}

/** Add the choices that differ from the defaults to `params`. */
export function writeChoices(choices, params) {
  if (choices.kind && choices.kind !== 'weight') params.set('kind', choices.kind);
  if (choices.focus !== null && choices.focus !== undefined) params.set('focus', String(choices.focus));
  if (choices.words) params.set('words', '1');
  if (choices.hideSpecial) params.set('specials', 'hide');
  if (choices.colour) params.set('colour', choices.colour);
  if (choices.shared) params.set('scale', 'shared');
  if (choices.gamma && choices.gamma !== 1) params.set('gamma', String(choices.gamma));
  const { edit } = choices;
  if (edit) {
    params.set('edit', String(edit.layer));
    if (edit.heads) params.set('edit_heads', edit.heads.join(','));
    if (edit.kind === 'probsparse') {
      params.set('edit_kind', 'probsparse');
      params.set('edit_c', String(edit.factor));
    }
    if (edit.temperature !== 1) params.set('edit_t', String(edit.temperature));
    if (edit.hidden_keys.length) params.set('edit_hide', edit.hidden_keys.join(','));
    if (edit.ablate) params.set('edit_ablate', '1');
    if (choices.diff) params.set('diff', '1');
  }
  return params;
}

/** An edit as the API takes it: {layer, heads, temperature, hidden_keys, ablate}, or {layer, heads, kind, factor}. */
export function editBody(edit) {
  if (!edit) return null;
  if (edit.kind === 'probsparse') return { layer: edit.layer, heads: edit.heads, kind: 'probsparse', factor: edit.factor };
  return {
    layer: edit.layer, heads: edit.heads, temperature: edit.temperature, hidden_keys: edit.hidden_keys, ablate: edit.ablate,
  };
}
