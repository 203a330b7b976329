import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { bodyRelayed } from './body-memory';

/** Where the body of an answer goes once the proxy knows what to do with it (collect it, or relay it). */
interface BodySink {
  data(chunk: Buffer): void;
  end(): void;
  fail(err: Error): void;
}

/**
 * One upstream request and its answer, driven directly by undici's dispatch callbacks.
 *
 * undici's `request()` wraps every answer in a Readable stream (plus an AsyncResource and a promise), and
 * piping that stream to the client adds a second stream machinery, which costs a bare proxy more CPU and garbage
 * than everything else it does (bench/bare-proxy.mjs against bench/bare-dispatch.mjs). Here the body's chunks go straight from undici's parser to a sink: collected for a
 * JSON answer, written to the client socket for a stream, with backpressure through undici's pause/resume.
 *
 * Chunks that arrive before the proxy attached a sink (headers and body usually come in one socket read) are
 * held until it does, which is within the same turn of the event loop.
 */
export class UpstreamExchange implements Dispatcher.DispatchHandler {
  statusCode = 0;
  /** Response headers, lower-case names; a repeated header is an array. */
  headers: Record<string, string | string[] | undefined> = {};

  private controller: Dispatcher.DispatchController | undefined;
  private cancelledWith: Error | undefined;
  private awaitingHeaders: ((exchange: UpstreamExchange) => void) | undefined;
  private awaitingFailure: ((err: Error) => void) | undefined;
  private held: Buffer[] = [];
  private ended = false;
  private failure: Error | undefined;
  private sink: BodySink | undefined;

  /** Set when the client left: the upstream request is (or will be, once started) aborted. */
  get cancelled(): boolean {
    return this.cancelledWith !== undefined;
  }

  /** Resolves when the status and headers arrived; rejects when the request failed before that. */
  response(): Promise<UpstreamExchange> {
    return new Promise((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      if (this.statusCode) return resolve(this);
      this.awaitingHeaders = resolve;
      this.awaitingFailure = reject;
    });
  }

  /** Aborts the upstream request (the client left, or the answer is not wanted); later chunks are dropped. */
  cancel(reason: Error): void {
    if (this.cancelledWith) return;
    this.cancelledWith = reason;
    this.controller?.abort(reason);
  }

  /** The whole body, once it ended. */
  readAll(): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      this.attach({
        data: (chunk) => chunks.push(chunk),
        end: () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)),
        fail: reject,
      });
    });
  }

  /**
   * Writes the body to the client as it arrives (its headers must have been written), ends the response, and
   * resolves once the upstream body ended; rejects with the upstream's error when it failed. `observe` sees each
   * chunk on the next tick, after the chunk's write: Node corks the socket for a write and sends it on the next
   * tick, and the tick queue runs first in, first out, so the bytes leave before any observer runs.
   */
  relayTo(res: ServerResponse, observe?: (chunk: Buffer) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      // The headers leave with the first chunk, in one write. If the provider holds that chunk back (a model
      // thinking), they leave alone on the next turn of the event loop, so the client sees the answer start.
      let flush: NodeJS.Immediate | undefined = this.held.length
        ? undefined
        : setImmediate(() => res.writableEnded || res.flushHeaders());
      let paused = false;
      const resume = () => {
        paused = false;
        this.controller?.resume();
      };
      this.attach({
        data: (chunk) => {
          if (flush) flush = void clearImmediate(flush);
          if (!res.write(chunk) && !paused) {
            paused = true; // the client reads slower than the provider writes: stop reading the provider
            this.controller?.pause();
            res.once('drain', resume);
          }
          if (observe) process.nextTick(observe, chunk);
          bodyRelayed(chunk.length);
        },
        end: () => {
          if (flush) flush = void clearImmediate(flush);
          res.end();
          resolve();
        },
        fail: (err) => {
          if (flush) flush = void clearImmediate(flush);
          reject(err);
        },
      });
    });
  }

  private attach(sink: BodySink): void {
    this.sink = sink;
    const held = this.held;
    this.held = [];
    for (const chunk of held) sink.data(chunk);
    if (this.failure) sink.fail(this.failure);
    else if (this.ended) sink.end();
  }

  // ---- undici's dispatch handler (called by the pool) ----

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.cancelledWith) controller.abort(this.cancelledWith);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return; // 1xx informational answers are not forwarded
    this.statusCode = statusCode;
    this.headers = headers;
    const ready = this.awaitingHeaders;
    this.awaitingHeaders = this.awaitingFailure = undefined;
    ready?.(this);
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.cancelledWith) return;
    if (this.sink) this.sink.data(chunk);
    else this.held.push(chunk);
  }

  onResponseEnd(): void {
    this.ended = true;
    this.sink?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, err: Error): void {
    this.failure = err;
    const failed = this.awaitingFailure;
    this.awaitingHeaders = this.awaitingFailure = undefined;
    if (failed) failed(err);
    else this.sink?.fail(err);
  }
}
