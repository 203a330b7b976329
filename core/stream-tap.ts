import type { Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { SseDecoder } from './sse';
import type { SseEvent, StreamUsageAccumulator } from './usage';

/**
 * Watches a response stream on its way to the client: decodes SSE events and feeds them to the provider's
 * usage accumulator and to the plugins. It only reads copies of chunks already handed to the client socket,
 * so it can neither delay nor change the bytes. Compressed streams are inflated on the side.
 */
export class StreamTap {
  private readonly decoder = new SseDecoder();
  private readonly inflater: Transform | undefined;
  private readonly drained: Promise<void>;

  constructor(
    private readonly accumulator: StreamUsageAccumulator,
    contentEncoding: string | undefined,
    private readonly onEvent: ((event: SseEvent) => void) | undefined,
  ) {
    this.inflater = inflaterFor(contentEncoding);
    if (this.inflater) {
      const inflater = this.inflater;
      inflater.on('data', (plain: Buffer) => this.consume(plain));
      this.drained = new Promise((resolve) => {
        inflater.once('end', resolve);
        inflater.once('error', () => resolve()); // corrupt compression: usage stays unknown, the client is unaffected
      });
    } else {
      this.drained = Promise.resolve();
    }
  }

  /** Usage the stream reported (undefined when it reported none). */
  result() {
    return this.accumulator.result();
  }

  /** Generated text seen on the stream, for estimation. */
  text(): string {
    return this.accumulator.text();
  }

  push(chunk: Buffer): void {
    if (this.inflater) this.inflater.write(chunk);
    else this.consume(chunk);
  }

  /** Call once the upstream body ended (or was cut); resolves when every event has been consumed. */
  async end(): Promise<void> {
    if (this.inflater) {
      this.inflater.end();
      await this.drained;
    }
    this.dispatch(this.decoder.end());
  }

  private consume(bytes: Buffer): void {
    this.dispatch(this.decoder.push(bytes));
  }

  private dispatch(events: SseEvent[]): void {
    for (const event of events) {
      this.accumulator.push(event);
      this.onEvent?.(event);
    }
  }
}

function inflaterFor(encoding: string | undefined): Transform | undefined {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return undefined;
  }
}
