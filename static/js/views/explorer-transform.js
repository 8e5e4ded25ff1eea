// The large map's word view and hidden special tokens (figures/words.js): the matrix drawn, the
// labels it gets, and the way between a drawn row or column and the API's token index.
import { t } from '../i18n/index.js';

let wordsModule = null;

/** figures/words.js, loaded when a toggle first needs it (null when it cannot be loaded). */
export async function loadWords() {
  if (!wordsModule) wordsModule = import('../figures/words.js').catch(() => null);
  return wordsModule;
}

const identity = (tokens, matrix) => ({
  tokens, matrix, toToken: (i) => i, fromToken: (i) => (i < tokens.length ? i : null), notes: [],
});

/**
 * @param {{tokens: object[], matrices: number[][][], text: string, pair: string|null, words: boolean,
 *   hideSpecial: boolean, shares: boolean}} input `matrices` are transformed alike (the large map,
 *   and the unedited one of a difference); `shares`: rows are shares of attention (renormalised when
 *   specials are hidden), otherwise (contribution norms) specials are only dropped
 * @returns {Promise<{tokens: object[], matrices: number[][][], toToken: (i: number) => number,
 *   fromToken: (i: number) => number|null, notes: string[], missing: boolean}>}
 */
export async function transformMaps({ tokens, matrices, text, pair, words, hideSpecial, shares }) {
  if (!words && !hideSpecial) return { ...identity(tokens, null), matrices, missing: false };
  const module = await loadWords();
  if (!module) return { ...identity(tokens, null), matrices, missing: true };

  const notes = [];
  let shown = tokens;
  let kept = tokens.map((_, i) => i); // shown index -> token index
  let out = matrices;
  if (hideSpecial) {
    const hidden = out.map((matrix) => module.hideSpecial(matrix, tokens));
    kept = hidden[0] ? hidden[0].kept : tokens.flatMap((token, i) => (token.special ? [] : [i]));
    out = shares ? hidden.map((h) => h.matrix) : out.map((m) => kept.map((q) => kept.map((k) => m[q][k])));
    shown = kept.map((i) => tokens[i]);
    notes.push(t(shares ? 'explorer.view.renormalised' : 'explorer.view.droppedSpecials'));
  }
  let pieceOf = kept.map((_, i) => [i]); // shown index -> indices among the kept tokens
  if (words) {
    const { words: merged } = module.mergeWords(shown, text, pair);
    out = out.map((matrix) => module.wordMatrix(matrix, merged));
    pieceOf = merged.map((word) => word.pieces);
    shown = merged.map((word) => ({
      text: word.display ?? word.text, display: word.display ?? word.text, special: word.special, segment: word.segment,
    }));
    notes.push(t('explorer.view.wordNote'));
  }
  const tokenOf = pieceOf.map((pieces) => kept[pieces[0]]);
  return {
    tokens: shown,
    matrices: out,
    toToken: (i) => tokenOf[i] ?? 0,
    fromToken: (token) => {
      const at = pieceOf.findIndex((pieces) => pieces.some((p) => kept[p] === token));
      return at < 0 ? null : at;
    },
    notes,
    missing: false,
  };
}

/** The index of the first token of segment B among `tokens`, or null for a single sentence. */
export function segmentBoundary(tokens) {
  const at = tokens.findIndex((token) => token.segment === 1);
  return at > 0 ? at : null;
}
