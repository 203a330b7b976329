import type { Logger } from 'tollgate';
import { Agent, request } from 'undici';

export interface BatchSenderOptions {
  url: string;
  headers: Record<string, string>;
  batchSize: number;
  flushIntervalMs: number;
  timeoutMs: number;
  /** Items kept while the receiver is slow or down; beyond this the oldest are dropped (and counted). */
  maxQueue: number;
}

/**
 * Sends queued items as JSON batches (`{"records": [...]}`) with undici, on a timer or as soon as a batch is
 * full, one POST at a time. Nothing here runs on a request's path: enqueue() only appends. A failed batch goes
 * back to the front of the queue and is retried on the next tick; close() sends what is left.
 */
export class BatchSender<T> {
  private queue: T[] = [];
  private sending: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly agent: Agent;
  /** Logged instead of the URL: webhook URLs often carry a secret in their path or query. */
  private readonly origin: string;
  dropped = 0;
  sent = 0;

  constructor(
    private readonly options: BatchSenderOptions,
    private readonly log: Logger,
  ) {
    this.origin = new URL(options.url).origin;
    this.agent = new Agent({
      connect: { timeout: options.timeoutMs },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs);
    this.timer.unref(); // the timer alone must not keep the process alive
  }

  enqueue(item: T): void {
    this.queue.push(item);
    if (this.queue.length > this.options.maxQueue) {
      this.queue.shift();
      this.dropped++;
    }
    if (this.queue.length >= this.options.batchSize) void this.flush();
  }

  /** Sends full batches, then what is left; one flush at a time. Resolves when done (failures are logged). */
  flush(): Promise<void> {
    this.sending ??= this.drain().finally(() => (this.sending = undefined));
    return this.sending;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.sending;
    await this.flush();
    if (this.queue.length > 0)
      this.log.warn(
        { records: this.queue.length, origin: this.origin },
        'usage-webhook: records not delivered at shutdown',
      );
    await this.agent.close();
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.batchSize);
      try {
        await this.post(batch);
        this.sent += batch.length;
      } catch (err) {
        this.queue.unshift(...batch); // keep order; retried on the next tick
        const excess = Math.max(0, this.queue.length - this.options.maxQueue);
        this.queue.splice(0, excess);
        this.dropped += excess;
        this.log.warn(
          { err: String(err), origin: this.origin, queued: this.queue.length },
          'usage-webhook: delivery failed, will retry',
        );
        return;
      }
    }
  }

  private async post(batch: T[]): Promise<void> {
    const res = await request(this.options.url, {
      method: 'POST',
      dispatcher: this.agent,
      headers: { ...this.options.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ records: batch }),
    });
    await res.body.dump(); // free the socket for reuse
    if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`receiver answered ${res.statusCode}`);
  }
}
