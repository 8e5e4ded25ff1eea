// Server-sent events read from any stream of text, for answers EventSource cannot ask for (a POST, as
// /api/v1/generate). The parsing follows the HTML standard's event stream rules: lines end in CRLF, LF or
// CR (a CR at the end of one chunk and an LF at the start of the next are one line end); a line starting
// with ':' is a comment (the server's `: ping`); "field: value" loses one space after the colon; data lines
// join with "\n"; a blank line dispatches the event (none when it had no data); the event's name is
// `event`, or "message". Pure: no DOM; readEventStream needs only a ReadableStream of bytes.

/**
 * A parser fed text in pieces of any size.
 * @param {(event: {event: string, data: string, id: string}) => void} onEvent called once per complete event
 * @returns {{push: (text: string) => void, end: () => void}} end(): the stream ended (an event without its
 *   blank line is dropped, as the standard says)
 */
export function createSseParser(onEvent) {
  let pending = ''; // text after the last line end
  let afterCr = false; // the last piece ended in CR: an LF starting the next one ends no second line
  let first = true; // a byte order mark at the very start is dropped
  let data = [];
  let name = '';
  let lastId = '';

  function line(text) {
    if (text === '') {
      if (data.length) onEvent({ event: name || 'message', data: data.join('\n'), id: lastId });
      data = [];
      name = '';
      return;
    }
    if (text[0] === ':') return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') name = value;
    else if (field === 'id' && !value.includes('\0')) lastId = value;
    // retry and unknown fields: ignored
  }

  return {
    push(text) {
      if (!text) return;
      if (first) {
        first = false;
        if (text[0] === '\uFEFF') text = text.slice(1);
      }
      if (afterCr && text[0] === '\n') text = text.slice(1);
      afterCr = false;
      pending += text;
      const ends = /\r\n|\r|\n/g;
      let start = 0;
      let match;
      while ((match = ends.exec(pending)) !== null) {
        // a CR at the very end may be the first half of a CRLF still to come: it ends the line either way
        line(pending.slice(start, match.index));
        start = match.index + match[0].length;
        if (match[0] === '\r' && start === pending.length) afterCr = true;
      }
      pending = pending.slice(start);
    },
    end() {
      pending = '';
      data = [];
      name = '';
    },
  };
}

/**
 * Read a byte stream (a fetch answer's body) to its end, calling onEvent for each event. Resolves when the
 * stream ends; rejects as the reader does, and with an AbortError as soon as `signal` aborts (the reader is
 * cancelled then, whether or not the stream itself ends). Characters split across chunks are decoded whole
 * (TextDecoder with stream: true).
 * @param {ReadableStream<Uint8Array>} body
 * @param {(event: {event: string, data: string, id: string}) => void} onEvent
 * @param {AbortSignal|null} [signal]
 */
export async function readEventStream(body, onEvent, signal = null) {
  const aborted = () => signal.reason ?? new DOMException('aborted', 'AbortError');
  if (signal && signal.aborted) throw aborted();
  const reader = body.getReader();
  const decoder = new TextDecoder('utf-8');
  const parser = createSseParser(onEvent);
  const cancel = () => { reader.cancel().catch(() => {}); };
  if (signal) signal.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (signal && signal.aborted) throw aborted();
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }));
    }
    parser.push(decoder.decode());
    parser.end();
  } finally {
    if (signal) signal.removeEventListener('abort', cancel);
    reader.releaseLock();
  }
}
