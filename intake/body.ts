import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../core/errors';
import { truncate } from '../core/truncate';
import { bodyTimeout, watchBodyPace, type BodyPace } from './body-pace';

/** Bodies from this size on, with a declared length, are copied into one buffer as they arrive. */
const PREALLOCATE_FROM = 256 * 1024;

/** What receiveBody hands a body's chunks to: memory (readBody) or a temporary file (services/upload-spool.ts). */
export interface BodySink<T> {
  /** Takes a chunk; false pauses the request until the sink calls control.resume(). */
  write(chunk: Buffer): boolean;
  /** The body ended, `size` bytes in all: the result (a rejection refuses the request). */
  end(size: number): Promise<T> | T;
  /** The body was refused or cut: release what the sink holds. */
  abort(): void;
}

export interface BodyControl {
  resume(): void;
  /** Refuses the body now (e.g. the sink cannot store it); the rest of the request is drained. */
  fail(err: unknown): void;
}

/** 413 before a byte is read when the declared length is over the limit. */
export function refuseDeclaredOverLimit(req: IncomingMessage, limit: number): void {
  if (Number(req.headers['content-length']) > limit) throw tooLarge(limit);
}

/**
 * Receives a request body chunk by chunk into a sink, refusing anything larger than `limit` bytes (413) as early
 * as possible, a client that leaves before the end (request_aborted), and one that sends it slower than `pace`
 * allows (408 body_timeout, intake/body-pace.ts).
 */
export function receiveBody<T>(
  req: IncomingMessage,
  limit: number,
  makeSink: (control: BodyControl) => BodySink<T>,
  pace?: BodyPace,
): Promise<T> {
  return new Promise((resolve, reject) => {
    let size = 0;
    let settled = false;
    let stopPace = () => undefined as void;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      req.resume(); // drain without keeping it, so the error can be written
      sink.abort();
      reject(err);
    };
    const sink = makeSink({ resume: () => settled || req.resume(), fail });
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return fail(tooLarge(limit));
      let more: boolean;
      try {
        more = sink.write(chunk);
      } catch (err) {
        return fail(err); // a throw here would escape the 'data' event and end the process
      }
      if (!more) req.pause();
    };
    const onEnd = () => {
      if (settled) return;
      settled = true;
      cleanup();
      Promise.resolve(size)
        .then((n) => sink.end(n))
        .then(resolve, (err: unknown) => {
          sink.abort();
          reject(err);
        });
    };
    const onError = (err: Error) =>
      fail(new GatewayError('request_aborted', 'The request body could not be read', { cause: err }));
    const onClose = () => {
      if (!req.complete) onError(new Error('client closed the connection before the body ended'));
    };
    const cleanup = () => {
      stopPace();
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
    stopPace = watchBodyPace(
      pace,
      () => size,
      () => fail(bodyTimeout(pace!)),
    );
    // The client may have left while earlier steps awaited (plugins, opening a spool file): 'close' has been.
    if (req.destroyed && !req.complete) onClose();
  });
}

/**
 * Reads the whole request body into memory, refusing anything larger than `limit` bytes (413). `received`, when
 * given, hears the size read so far after each chunk; a throw from it refuses the body with that error. `pace`: how
 * long the body may take (intake/body-pace.ts).
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  received?: (size: number) => void,
  pace?: BodyPace,
): Promise<Buffer> {
  try {
    refuseDeclaredOverLimit(req, limit);
  } catch (err) {
    return Promise.reject(err);
  }
  const declared = Number(req.headers['content-length']);
  return receiveBody(
    req,
    limit,
    () => {
      const chunks: Buffer[] = [];
      let size = 0;
      // A large body goes straight into one buffer of its declared size: each chunk can be freed at once and
      // no second copy is made at the end.
      let whole = declared >= PREALLOCATE_FROM ? Buffer.allocUnsafe(declared) : undefined;
      return {
        write(chunk) {
          size += chunk.length;
          received?.(size);
          if (whole && size <= whole.length) {
            chunk.copy(whole, size - chunk.length);
            return true;
          }
          if (whole) {
            chunks.push(whole.subarray(0, size - chunk.length)); // more than declared (cannot happen over HTTP/1.1)
            whole = undefined;
          }
          chunks.push(chunk);
          return true;
        },
        end(total) {
          if (whole) return total === whole.length ? whole : whole.subarray(0, total);
          return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total);
        },
        abort() {
          chunks.length = 0;
          whole = undefined;
        },
      };
    },
    pace,
  );
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('body_too_large', `The request body exceeds the gateway's limit of ${limit} bytes.`);
}

/**
 * Longest model name accepted, in characters. Real names are far shorter; a longer one is refused before anything is
 * logged or stored (stored, it made a PostgreSQL rollup key over its 2,704-byte B-tree limit).
 */
export const MAX_MODEL_LENGTH = 256;

/** The "model" field of a JSON body or a form: a string of at most MAX_MODEL_LENGTH characters, or absent. */
export function modelField(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string')
    throw new GatewayError('invalid_body', 'The "model" field must be a string.', { param: 'model' });
  if (value.length > MAX_MODEL_LENGTH) {
    throw new GatewayError(
      'invalid_model',
      `The "model" field is ${value.length} characters long; a model name has at most ${MAX_MODEL_LENGTH}.`,
      { param: 'model' },
    );
  }
  return value;
}

/** Parses a JSON request body; routing needs an object. */
export function parseJsonBody(body: Buffer): Record<string, unknown> {
  if (body.length === 0)
    throw new GatewayError('invalid_json', 'The request body is empty; a JSON object is expected.');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new GatewayError(
      'invalid_json',
      `The request body is not valid JSON: ${truncate((err as Error).message, 200)}`,
      { cause: err },
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GatewayError('invalid_body', 'The request body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}
