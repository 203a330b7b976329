import { StringDecoder } from 'node:string_decoder';
import type { SseEvent } from './usage';

const LF = 10;
const COLON = 58;
const SPACE = 32;

/**
 * Incremental Server-Sent-Events decoder (WHATWG HTML "Interpreting an event stream"), the only SSE parser
 * in the codebase. It runs on every streamed chunk, so it scans each chunk once with indexOf (no regexes,
 * no re-scan of earlier bytes), and keeps only the unterminated tail line between chunks.
 *
 * - Bytes are decoded with a StringDecoder, so a multi-byte UTF-8 character split across chunks is kept whole.
 * - Lines end in LF, CRLF or CR; a CR at the end of one chunk followed by LF in the next is one line break.
 * - `event:` sets the type, `data:` lines join with "\n", `id:` sets the last event id (ignored if it
 *   contains NUL; it persists across events, as EventSource keeps it), `retry:` and unknown fields are ignored,
 *   lines starting with ":" are comments, one optional space after the colon is removed, a leading BOM is dropped.
 * - A blank line dispatches the event if it has data (an event with only `event:` is not dispatched).
 * - Deliberate difference from EventSource: end() dispatches a final event that was not followed by a blank
 *   line (EventSource discards it). For metering, a usage chunk the provider sent is worth reading even if the
 *   connection closed before the terminating blank line.
 *
 * `event` is left undefined when the event named none (EventSource's default type would be "message").
 * Do not mix Buffer and string chunks within one stream: strings bypass the UTF-8 decoder.
 */
export class SseDecoder {
  private readonly utf8 = new StringDecoder('utf8');
  /** The current line's text from earlier chunks (no terminator seen yet). */
  private partial = '';
  /** The previous chunk ended with CR: an LF starting the next chunk belongs to that line break. */
  private skipLf = false;
  private atStart = true;
  private data: string | undefined;
  private eventType: string | undefined;
  private lastId = '';

  /** Feeds one chunk; returns the events it completed (often none or one). */
  push(chunk: Buffer | string): SseEvent[] {
    const out: SseEvent[] = [];
    this.scan(typeof chunk === 'string' ? chunk : this.utf8.write(chunk), out);
    return out;
  }

  /** The stream ended: flushes the decoder and the last line, and dispatches a pending event (see above). */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    this.scan(this.utf8.end(), out);
    if (this.partial.length > 0) {
      const line = this.partial;
      this.partial = '';
      this.line(line, out);
    }
    this.dispatch(out);
    this.skipLf = false;
    return out;
  }

  private scan(text: string, out: SseEvent[]): void {
    const len = text.length;
    if (len === 0) return;
    let pos = 0;
    if (this.atStart) {
      this.atStart = false;
      if (text.charCodeAt(0) === 0xfeff) pos = 1;
    }
    if (this.skipLf) {
      this.skipLf = false;
      if (text.charCodeAt(pos) === LF) pos++;
    }
    // Next LF and CR positions, each found once per chunk (a stream that never uses CR costs one indexOf).
    let lf = text.indexOf('\n', pos);
    let cr = text.indexOf('\r', pos);
    while (pos < len) {
      if (lf !== -1 && lf < pos) lf = text.indexOf('\n', pos);
      if (cr !== -1 && cr < pos) cr = text.indexOf('\r', pos);
      const end = lf === -1 ? cr : cr === -1 ? lf : lf < cr ? lf : cr;
      if (end === -1) {
        this.partial += pos === 0 ? text : text.slice(pos);
        return;
      }
      let line = text.slice(pos, end);
      if (this.partial.length > 0) {
        line = this.partial + line;
        this.partial = '';
      }
      pos = end + 1;
      if (end === cr) {
        if (pos === len) this.skipLf = true;
        else if (text.charCodeAt(pos) === LF) pos++;
      }
      this.line(line, out);
    }
  }

  private line(line: string, out: SseEvent[]): void {
    const len = line.length;
    if (len === 0) {
      this.dispatch(out);
      return;
    }
    if (line.charCodeAt(0) === COLON) return; // comment
    const colon = line.indexOf(':');
    let valueStart = len;
    const nameEnd = colon === -1 ? len : colon;
    if (colon !== -1) valueStart = line.charCodeAt(colon + 1) === SPACE ? colon + 2 : colon + 1;
    // Field names are compared by length first, so most lines never build a name string.
    if (nameEnd === 4 && line.startsWith('data')) {
      const value = line.slice(valueStart);
      this.data = this.data === undefined ? value : `${this.data}\n${value}`;
    } else if (nameEnd === 5 && line.startsWith('event')) {
      this.eventType = line.slice(valueStart);
    } else if (nameEnd === 2 && line.startsWith('id')) {
      const value = line.slice(valueStart);
      if (value.indexOf('\0') === -1) this.lastId = value;
    }
  }

  private dispatch(out: SseEvent[]): void {
    const data = this.data;
    const type = this.eventType;
    this.data = undefined;
    this.eventType = undefined;
    if (data === undefined) return;
    const event: SseEvent = { data };
    if (type) event.event = type;
    if (this.lastId) event.id = this.lastId;
    out.push(event);
  }
}
