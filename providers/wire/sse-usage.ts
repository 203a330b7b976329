import type { EndpointKey, SseEvent, StreamUsageAccumulator, Usage, UsageParser } from '../../core/usage';
import { isObject, num, obj, parseJson, str, type JsonObject } from './read';

/** Event data held for text collection before it is folded into text (a long stream stays bounded). */
const MAX_HELD_CHARS = 1 << 20;

/**
 * Base of the stream accumulators. Usage is read as events arrive, but only events that may carry it are
 * parsed then (the data names a "usage" key): the many content deltas of a stream are only kept as they
 * came, and parsed for their text if text() is asked for, i.e. when the stream reported no usage and the
 * tokenizer must estimate. A stream that reports its usage is never parsed chunk by chunk.
 * An error event after the 200 status (Anthropic `event: error`, an OpenAI or OpenRouter chunk holding an
 * "error" object) is noted, so that the record says the answer did not complete (Usage.streamError).
 * Non-object payloads (`[DONE]`, keep-alives) and malformed JSON are skipped, and nothing escapes push().
 */
export abstract class JsonStreamAccumulator implements StreamUsageAccumulator {
  protected usage: Usage | undefined;
  private streamError: string | undefined;
  private generated = '';
  /** Events not yet read for text, in order: raw data, or the object when it was parsed for usage already. */
  private held: (string | JsonObject)[] = [];
  private heldChars = 0;

  push(event: SseEvent): void {
    const data = event.data;
    if (!startsWithBrace(data)) return;
    // Named events (Anthropic, OpenAI Responses) name their errors; data-only streams put an "error" object in a chunk.
    if (event.event === 'error' || (event.event === undefined && namesObject(data, '"error"'))) this.noteError(data);
    if (!this.wants(event)) return;
    let item: string | JsonObject = data;
    if (namesObject(data, '"usage"')) {
      const json = parseJson(data);
      if (!isObject(json)) return;
      this.guarded(() => this.readUsage(json));
      item = json;
    }
    this.held.push(item);
    this.heldChars += data.length;
    if (this.heldChars > MAX_HELD_CHARS) this.foldText();
  }

  result(): Usage | undefined {
    return this.streamError === undefined ? this.usage : { ...this.usage, streamError: this.streamError };
  }

  text(): string {
    this.foldText();
    return this.generated;
  }

  /** Cheap pre-filter on the SSE event name, so large uninteresting events are never kept or parsed. */
  protected wants(_event: SseEvent): boolean {
    return true;
  }

  /** Reads usage from an event whose data names a "usage" key. */
  protected abstract readUsage(json: JsonObject): void;

  /** The generated text an event carries (content, reasoning, tool arguments), or undefined. */
  protected abstract textOf(json: JsonObject): string | undefined;

  /** Records the error an event reports: `{"type":"error","error":{"type":...}}`, `{"error":{...}}` or `{"type":"error","code":...}`. */
  private noteError(data: string): void {
    const json = parseJson(data);
    if (!isObject(json)) return;
    const error = obj(json, 'error');
    if (!error && str(json, 'type') !== 'error') return; // e.g. response.failed: its error sits inside `response`, with final usage
    const code = str(error, 'type') ?? str(error, 'code') ?? num(error, 'code') ?? str(json, 'code');
    this.streamError = code === undefined || code === '' ? 'stream_error' : String(code).slice(0, 64);
  }

  private foldText(): void {
    for (const item of this.held) {
      const json = typeof item === 'string' ? parseJson(item) : item;
      if (!isObject(json)) continue;
      this.guarded(() => {
        const text = this.textOf(json);
        if (text) this.generated += text;
      });
    }
    this.held = [];
    this.heldChars = 0;
  }

  private guarded(read: () => void): void {
    try {
      read();
    } catch {
      // A reader bug must not break the proxied stream; the record just lacks this event.
    }
  }
}

/**
 * The data has the quoted `key` (e.g. '"usage"') with an object value. With include_usage, OpenAI sends
 * `"usage":null` in every chunk; only the one with the object matters. Inside JSON strings quotes are escaped,
 * so generated text cannot fake the key.
 */
function namesObject(data: string, key: string): boolean {
  for (let i = data.indexOf(key); i !== -1; i = data.indexOf(key, i + key.length)) {
    let j = skipBlanks(data, i + key.length);
    if (data.charCodeAt(j) !== 58) continue; // :
    j = skipBlanks(data, j + 1);
    if (data.charCodeAt(j) === 123) return true; // {
  }
  return false;
}

function skipBlanks(s: string, from: number): number {
  let i = from;
  while (i < s.length && isBlank(s.charCodeAt(i))) i++;
  return i;
}

const isBlank = (c: number): boolean => c === 32 || c === 9 || c === 10 || c === 13;

/** First non-blank character is '{' (checked without trimming, i.e. without copying the string). */
function startsWithBrace(data: string): boolean {
  return data.charCodeAt(skipBlanks(data, 0)) === 123; // {
}

/** For endpoints that report no usage in a stream (or do not stream). */
export class NoUsageStream implements StreamUsageAccumulator {
  push(_event: SseEvent): void {}
  result(): Usage | undefined {
    return undefined;
  }
  text(): string {
    return '';
  }
}

/** How one API shape (chat, responses, messages ...) reports usage. */
export interface EndpointUsage {
  fromJson(body: unknown): Usage | undefined;
  stream(): StreamUsageAccumulator;
}

/** A UsageParser that routes each endpoint to its API shape; endpoints not listed report nothing. */
export function byEndpoint(table: Partial<Record<EndpointKey, EndpointUsage>>): UsageParser {
  return {
    fromJson: (endpoint, body) => table[endpoint]?.fromJson(body),
    createStreamAccumulator: (endpoint) => table[endpoint]?.stream() ?? new NoUsageStream(),
  };
}
