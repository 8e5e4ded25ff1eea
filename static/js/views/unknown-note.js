// What the model cannot read in a text: its tokens that are unknown to the model (the answer's `unknown`
// flag: [UNK], or a token whose text is not its source), the characters of the text they stand for, and
// what to do about it. One note, the same on the explorer, /steps and /learn: `showUnknownNote` puts it on a
// page (the commands it names marked translate="no", /lm as a link), `unknownNote` is its plain text. Besides
// serving a model that has the characters, it points to /lm, which grows a small model from the learner's own
// text, every character one token.
import { t } from '../i18n/index.js';

const DEFAULT_MODEL = 'minilm';

// The commands and the file the note names: data, the same in every language.
const NAMES = Object.freeze({
  bert: 'attnscope serve --model google-bert/bert-base-chinese', // ui-text: not UI (a command)
  qwen: 'attnscope serve --model Qwen/Qwen2.5-0.5B', // ui-text: not UI (a command)
  serve: 'attnscope serve --model ORG/NAME', // ui-text: not UI (a command)
  docs: 'docs/models.md',
  lm: '/lm',
});
const MARK = '\u0001';

/**
 * The unknown tokens of a token list and the characters they stand for (whitespace not counted).
 * @param {{unknown: boolean, display: string}[]} tokens an answer's tokens
 * @returns {{tokens: number, characters: number, total: number}}
 */
export function unknownCount(tokens) {
  let count = 0;
  let characters = 0;
  for (const token of tokens) {
    if (!token.unknown) continue;
    count += 1;
    characters += Array.from(token.display).filter((c) => c.trim() !== '').length;
  }
  return { tokens: count, characters, total: tokens.length };
}

/** The note's pieces: [text, isName] pairs, or [] when the model knows every token. */
function pieces(tokens, model) {
  const count = unknownCount(tokens);
  if (count.tokens === 0) return [];
  const marked = Object.fromEntries(Object.keys(NAMES).map((name) => [name, `${MARK}${name}${MARK}`]));
  const help = (model ?? DEFAULT_MODEL) === DEFAULT_MODEL ? 'tokens.unknownHelp.minilm' : 'tokens.unknownHelp';
  const text = `${t('tokens.unknownSummary', { ...count, unk: '[UNK]' })} ${t(help, marked)} ${t('tokens.unknownGrow', marked)}`;
  // split on the marks: odd pieces are names
  return text.split(MARK).map((part, i) => (i % 2 ? [NAMES[part], true] : [part, false])).filter(([part]) => part);
}

/**
 * The note for a text's tokens on `model` (an id; null: the server's default, MiniLM), or '' when the model
 * knows every token. It says how many tokens and characters are unknown and that they all look alike to the
 * model; for MiniLM, that its vocabulary is English and how to serve a model that reads Chinese from the local
 * Hugging Face cache.
 */
export function unknownNote(tokens, model = null) {
  return pieces(tokens, model).map(([part]) => part).join('');
}

/** Fills `element` with the note (names in <code translate="no">) and hides it when there is none. */
export function showUnknownNote(element, tokens, model = null) {
  const parts = pieces(tokens, model);
  element.replaceChildren(...parts.map(([part, name]) => {
    if (!name) return part;
    if (part === NAMES.lm) {
      const link = document.createElement('a');
      link.href = NAMES.lm;
      link.className = 'unknown-note-lm';
      link.textContent = part;
      return link;
    }
    const code = document.createElement('code');
    code.translate = false;
    code.textContent = part;
    return code;
  }));
  element.hidden = parts.length === 0;
}
