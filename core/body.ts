import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { GatewayError } from './errors';

/** Bodies from this size on, with a declared length, are copied into one buffer as they arrive. */
const PREALLOCATE_FROM = 256 * 1024;

/** Reads the whole request body, refusing anything larger than `limit` bytes (413) as early as possible. */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // A large upload goes straight into one buffer of its declared size: each chunk can be freed at once and
    // no second copy is made at the end, so a 20 MB upload holds ~20 MB, not ~40.
    let whole = declared >= PREALLOCATE_FROM ? Buffer.allocUnsafe(declared) : undefined;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.resume(); // drain without keeping it, so the 413 can be written
        reject(tooLarge(limit));
        return;
      }
      if (whole && size <= whole.length) {
        chunk.copy(whole, size - chunk.length);
        return;
      }
      if (whole) {
        chunks.push(whole.subarray(0, size - chunk.length)); // more than declared (cannot happen over HTTP/1.1)
        whole = undefined;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      if (whole) resolve(size === whole.length ? whole : whole.subarray(0, size));
      else resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(new GatewayError('request_aborted', 'The request body could not be read', { cause: err }));
    };
    const onClose = () => {
      if (!req.complete) onError(new Error('client closed the connection before the body ended'));
    };
    const cleanup = () => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

function tooLarge(limit: number): GatewayError {
  return new GatewayError('body_too_large', `The request body exceeds the gateway's limit of ${limit} bytes.`);
}

/** Parses a JSON request body; routing needs an object. */
export function parseJsonBody(body: Buffer): Record<string, unknown> {
  if (body.length === 0) throw new GatewayError('invalid_json', 'The request body is empty; a JSON object is expected.');
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new GatewayError('invalid_json', `The request body is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GatewayError('invalid_body', 'The request body must be a JSON object.');
  }
  return value as Record<string, unknown>;
}

/** Reads plain fields (model, stream ...) of a multipart/form-data body; file parts are skipped, not copied. */
export function multipartFields(body: Buffer, contentType: string): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType }, limits: { fieldSize: 64 * 1024, fields: 100 } });
    } catch (err) {
      reject(new GatewayError('invalid_body', `Malformed multipart/form-data body: ${(err as Error).message}`, { cause: err }));
      return;
    }
    parser.on('field', (name, value) => {
      if (!(name in fields)) fields[name] = value;
    });
    parser.on('file', (_name, stream) => stream.resume());
    parser.on('close', () => resolve(fields));
    parser.on('error', (err) => reject(new GatewayError('invalid_body', `Malformed multipart/form-data body: ${(err as Error).message}`, { cause: err })));
    parser.end(body);
  });
}
