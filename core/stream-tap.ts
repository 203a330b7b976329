import { SideInflater } from './side-inflater';
import { SseDecoder } from './sse';
import type { SseEvent, StreamUsageAccumulator } from './usage';

/**
 * Watches a response stream on its way to the client: decodes SSE events and feeds them to the provider's
 * usage accumulator and to the plugins. It only reads copies of chunks already handed to the client socket,
 * so it can neither delay nor change the bytes. Compressed streams are inflated on the side.
 */
export class StreamTap {
  private readonly decoder = new SseDecoder();
  private readonly source: SideInflater;

  constructor(
    private readonly accumulator: StreamUsageAccumulator,
    contentEncoding: string | undefined,
    private readonly onEvent: ((event: SseEvent) => void) | undefined,
  ) {
    this.source = new SideInflater(contentEncoding, (plain) => this.dispatch(this.decoder.push(plain)));
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
    this.source.push(chunk);
  }

  /** Call once the upstream body ended (or was cut); resolves when every event has been consumed. */
  async end(): Promise<void> {
    await this.source.end();
    this.dispatch(this.decoder.end());
  }

  private dispatch(events: SseEvent[]): void {
    for (const event of events) {
      this.accumulator.push(event);
      this.onEvent?.(event);
    }
  }
}
