import pino, { type Logger } from 'pino';
import { LogDestination } from './log-destination';

/** Paths pino censors in every log line, wherever a caller might have put request headers or keys. */
export const REDACT_PATHS = [
  'authorization',
  'x-api-key',
  'x-gateway-key',
  'key',
  'apiKey',
  'token',
  '*.authorization',
  '*["x-api-key"]',
  '*["x-gateway-key"]',
  '*.key',
  '*.apiKey',
  '*.token',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
  '*.headers["x-gateway-key"]',
  '*.headers.cookie',
];

/**
 * The root logger. Lines are JSON and written asynchronously (SonicBoom), so logging never blocks a request;
 * `flush` is called on shutdown so the last lines are not lost. Lines are written in blocks of at least 4 KiB
 * (a write per line is a system call per request), and at least every 200 ms when traffic is low
 * (runtime/log-destination.ts).
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  // A silent logger (tests, benchmarks) writes nothing: it gets no destination, timer or exit hook of its own.
  const out = destination ?? (level === 'silent' ? { write: () => undefined } : new LogDestination(1));
  return pino({ level, base: { service: 'tollgate' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, out);
}
