import { GatewayError } from '../core/errors';

/**
 * How long a request body may take to arrive (server.body_timeout_ms, server.body_min_rate): `timeoutMs`, plus one
 * second for every `minBytesPerSecond` bytes received. A body sent at least that fast always has time, however
 * large; one that trickles (a slow upload holding its reservation of server.max_buffered_bytes) is cut with
 * 408 body_timeout. timeoutMs 0: no time-out of the gateway's own.
 */
export interface BodyPace {
  timeoutMs: number;
  /** 0: the body must arrive within timeoutMs whatever its size. */
  minBytesPerSecond: number;
}

/**
 * Watches one body as it arrives: calls `expire` once the time allowed for the bytes received so far has passed.
 * One timer per body, set again only when it fires early (the bytes received since earned more time): nothing is
 * done per chunk. Returns what stops the watch.
 */
export function watchBodyPace(pace: BodyPace | undefined, received: () => number, expire: () => void): () => void {
  if (!pace || pace.timeoutMs <= 0) return () => undefined;
  const start = performance.now();
  const allowedMs = () =>
    pace.timeoutMs + (pace.minBytesPerSecond > 0 ? (received() * 1000) / pace.minBytesPerSecond : 0);
  const check = () => {
    const left = allowedMs() - (performance.now() - start);
    if (left <= 0) expire();
    else timer = setTimeout(check, Math.ceil(left));
  };
  let timer = setTimeout(check, pace.timeoutMs);
  return () => clearTimeout(timer);
}

export function bodyTimeout(pace: BodyPace): GatewayError {
  const rate = pace.minBytesPerSecond > 0 ? ` plus one second per ${pace.minBytesPerSecond} bytes` : '';
  return new GatewayError(
    'body_timeout',
    `The request body did not arrive in time (server.body_timeout_ms: ${pace.timeoutMs} ms${rate}).`,
  );
}
