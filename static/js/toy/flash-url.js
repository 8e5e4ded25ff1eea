// The /flash page's state as URL query parameters, and back, on top of the toy's (toy/url.js):
//   /flash?q=…&k=…&v=…&wq=…&heads=2&causal=1&hidden=1&head=1&br=2&bc=3&backward=1&tile=5
// The layer and its inputs are written as /toy writes them (only what differs from the worked example),
// plus the block sizes br (Br) and bc (Bc), 1..64 (default 2 each, the API's), the backward (backward=1)
// and the tile shown (tile: its index among the forward's tiles, then the backward's; default 0).
// The same setup opens on /toy (toyParams) and /toy's setup opens here (flashParams).
import { indexParam } from '../page.js';
import { OPTION_DEFAULTS, readState, writeState } from './url.js';

export const MAX_BLOCK = 64; // the server's limit (model/lab/flash.py MAX_BLOCK)
export const BLOCK_DEFAULT = 2;

const block = (text) => (text !== null && /^\d{1,2}$/.test(text) && Number(text) >= 1 && Number(text) <= MAX_BLOCK ? Number(text) : null);

/** What /flash sends of a toy state: the layer and its inputs only (FlashAttention tiles plain softmax attention). */
const { hidden: _keep, ...MECHANISMS } = OPTION_DEFAULTS; // hidden keys belong to the layer's mask: kept
const LAYER_ONLY = { ...MECHANISMS, compare: false, shuffle: false, backward: false, upstream: 'ones', query: 0, step: 'input' };

/**
 * The state a /flash URL says, given the worked example: the toy's state (readState) plus br, bc, tile,
 * backward; a block size that cannot be read falls back to 2 and is listed in `unreadable` as block_rows
 * or block_cols.
 */
export function readFlashState(params, example) {
  const toy = readState(params, example);
  const unreadable = [...toy.unreadable];
  const size = (name, field) => {
    const text = params.get(name);
    if (text === null) return BLOCK_DEFAULT;
    const value = block(text);
    if (value === null) unreadable.push(field);
    return value ?? BLOCK_DEFAULT;
  };
  const br = size('br', 'block_rows');
  const bc = size('bc', 'block_cols');
  return { ...toy, br, bc, tile: indexParam(params.get('tile')), unreadable };
}

/** The URL parameters of a /flash state: the toy's layer and inputs, then br, bc, backward and tile when not the default. */
export function writeFlashState(state, example) {
  const params = writeState({ ...state, ...LAYER_ONLY, backward: state.backward }, example);
  if (state.br !== BLOCK_DEFAULT) params.set('br', String(state.br));
  if (state.bc !== BLOCK_DEFAULT) params.set('bc', String(state.bc));
  if (state.tile) params.set('tile', String(state.tile));
  return params;
}

/** The /toy URL parameters of the same layer and inputs (and head), from a /flash state. */
export function toyParams(state, example) {
  return writeState({ ...state, ...LAYER_ONLY }, example);
}

/** The /flash URL parameters of a /toy state's layer and inputs (and head); its mechanisms are left out. */
export function flashParams(state, example) {
  return writeFlashState({ ...state, br: BLOCK_DEFAULT, bc: BLOCK_DEFAULT, tile: 0, backward: false }, example);
}

/** The POST /api/v1/flash request of a state. */
export function flashRequest(state) {
  return {
    queries: state.queries,
    keys: state.keys,
    values: state.values,
    n_heads: state.heads,
    causal: state.causal,
    weights: state.weights,
    hidden_keys: state.hidden,
    block_rows: state.br,
    block_cols: state.bc,
    head: state.head,
    backward: state.backward,
  };
}
