import busboy from 'busboy';
import { GatewayError } from '../core/errors';
import { truncate } from '../core/truncate';
import type { FileHead } from '../core/upload';

/** Collects the plain fields (model, stream ...) of a multipart/form-data body written to it chunk by chunk. */
export interface MultipartFieldReader {
  write(chunk: Buffer): void;
  /** Resolves once the whole body was written and parsed; rejects with invalid_body when it is malformed. */
  end(): Promise<Record<string, string>>;
  /** Settles (invalid_body) as soon as the form is found malformed, before the end. */
  readonly failed: Promise<GatewayError>;
  /** The plain fields read so far (the first of each name). */
  readonly fields: Readonly<Record<string, string>>;
  /** Whether a file part has begun in what was written so far. */
  readonly fileStarted: boolean;
  /** True while the head of the first file part (headBytes) is still being gathered. */
  readonly wantsHead: boolean;
  /** The head gathered so far, when headBytes was asked for and a file part began. */
  readonly fileHead: FileHead | undefined;
}

/**
 * Throws invalid_body for a content type without a usable boundary. File parts are skipped as they pass, not copied,
 * except the first `headBytes` of the first one when asked (an audio file's header, read for its duration).
 */
export function multipartFieldReader(contentType: string, headBytes = 0): MultipartFieldReader {
  let parser: busboy.Busboy;
  try {
    // fileSize: busboy still finds where each file part ends, but hands none of its bytes beyond this to the part's
    // stream (0: none at all), which would push every chunk through a stream only to drop it.
    parser = busboy({
      headers: { 'content-type': contentType },
      limits: { fieldSize: 64 * 1024, fields: 100, fileSize: headBytes },
    });
  } catch (err) {
    throw malformed(err);
  }
  const fields: Record<string, string> = {};
  let broken = false;
  let fail!: (err: GatewayError) => void;
  const failed = new Promise<GatewayError>((resolve) => (fail = resolve));
  parser.on('field', (name, value) => {
    // Priced by one model and billed by another (a provider may read the last): refused.
    if (name === 'model' && name in fields) {
      broken = true;
      fail(new GatewayError('invalid_body', 'The form has more than one model field; send one.', { param: 'model' }));
    }
    if (!(name in fields)) fields[name] = value;
  });
  let fileStarted = false;
  interface Head {
    chunks: Buffer[];
    size: number;
    done: boolean;
    info: busboy.FileInfo;
  }
  let head: Head | undefined;
  // A cut form destroys the file part's stream with the parser's error, reported once through the parser.
  parser.on('file', (_name, stream, info) => {
    fileStarted = true;
    stream.on('error', () => undefined);
    if (headBytes > 0 && !head) {
      const h: Head = { chunks: [], size: 0, done: false, info };
      head = h;
      stream.on('data', (chunk: Buffer) => {
        h.chunks.push(chunk);
        h.size += chunk.length;
      });
      stream.once('end', () => (h.done = true));
      stream.once('limit', () => (h.done = true));
    } else stream.resume();
  });
  // A listener stays on: a parser that failed must not turn a later event into an uncaught 'error'.
  parser.on('error', (err) => {
    broken = true;
    fail(malformed(err));
  });
  const closed = new Promise<Record<string, string>>((resolve) =>
    parser.once('close', () => broken || resolve(fields)),
  );
  return {
    write: (chunk) => void (broken || parser.write(chunk)),
    end() {
      parser.end();
      return Promise.race([closed, failed.then((err) => Promise.reject(err))]);
    },
    failed,
    fields,
    get fileStarted() {
      return fileStarted;
    },
    get wantsHead() {
      return headBytes > 0 && !broken && !(head && (head.done || head.size >= headBytes));
    },
    get fileHead() {
      if (!head) return undefined;
      if (head.chunks.length > 1) head.chunks = [Buffer.concat(head.chunks)];
      return {
        bytes: head.chunks[0] ?? Buffer.alloc(0),
        mimeType: head.info.mimeType,
        filename: head.info.filename ?? '',
      };
    },
  };
}

/** A whole multipart/form-data body's plain fields, and the head of its first file part when asked for. */
export async function multipartForm(
  body: Buffer,
  contentType: string,
  headBytes = 0,
): Promise<{ fields: Record<string, string>; head: FileHead | undefined }> {
  const reader = multipartFieldReader(contentType, headBytes);
  reader.write(body);
  return { fields: await reader.end(), head: reader.fileHead };
}

function malformed(err: unknown): GatewayError {
  return new GatewayError(
    'invalid_body',
    `Malformed multipart/form-data body: ${truncate((err as Error).message, 200)}`,
    { cause: err },
  );
}
