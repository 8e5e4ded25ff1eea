// Token text as something one can read, for the lists of predicted tokens (the logit lens, a generation's
// top 5) and their hover titles. Pure: no DOM.
//
// A byte-level vocabulary has a token for every byte, and a model's top 5 often holds one alone: GPT-2's
// "ă" is byte 0x03, Llama's "<0x7F>" byte 0x7F. Their displays are control characters, which a page shows
// as nothing (or, for the bidirectional controls U+202A–U+202E and U+2066–U+2069, reorders the text around
// them). As on every other token (figures/axes.js visibleToken): a C0 control or DEL as its Unicode
// picture (␀ … ␟, ␡), whitespace alone as signs; characters with no picture (the other controls and format
// characters: the C1 controls U+0080–U+009F, zero-width and direction marks, the byte-order mark; the line and
// paragraph separators) as an escape: "\x85", "\u200B", "\u202E".
import { visibleToken } from './axes.js';

const C0 = /[\u0000-\u001f\u007f]/g;
// every other control (Cc: the C1 controls) and format character (Cf: zero-width and direction marks, bidi
// embeddings and isolates, the soft hyphen, the byte-order mark, ...), and the line and paragraph separators
const NO_PICTURE = /[\p{Cc}\p{Cf}\u2028\u2029]/gu;
const JOINER = '\u200d'; // kept between two characters: it joins emoji ("👩‍💻"); alone or at an end, escaped

const hex = (char, digits) => char.codePointAt(0).toString(16).toUpperCase().padStart(digits, '0');

/** A character with no picture as an escape: "\x85" below U+0100, else "\u200B" (or "\u{E0001}"). */
export function escapeInvisible(text) {
  const s = String(text);
  return s.replace(NO_PICTURE, (char, at) => {
    if (char === JOINER && at > 0 && at < s.length - 1) return char;
    const code = char.codePointAt(0);
    if (code < 0x100) return `\\x${hex(char, 2)}`;
    return code > 0xffff ? `\\u{${hex(char, 1)}}` : `\\u${hex(char, 4)}`;
  });
}

/** Any text with control characters made visible: C0 and DEL as pictures, the rest as escapes. */
export function visibleText(text) {
  return escapeInvisible(String(text).replace(C0, (c) => String.fromCharCode(c === '\u007f' ? 0x2421 : 0x2400 + c.charCodeAt(0))));
}

/** A predicted token's display as shown in a list: visibleToken's, and no invisible character left. */
export function predictedToken(display) {
  return escapeInvisible(visibleToken(display));
}
