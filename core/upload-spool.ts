import { randomUUID } from 'node:crypto';
import { close, createReadStream, createWriteStream, mkdirSync, open } from 'node:fs';
import { unlink } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { multipartFieldReader, receiveBody, refuseDeclaredOverLimit } from './body';
import { GatewayError } from './errors';

/**
 * Large multipart uploads (audio to transcribe, images to edit) go to a temporary file, not to memory, the way
 * nginx buffers request bodies. Routing needs the form's `model` field, which SDKs often send after the file
 * (the Node SDK keeps the caller's key order: `{ file, model }`), so an upload is received whole before the
 * provider is known. Held in memory, each 20 MB upload raised the gateway's RSS by 60-80 MB until the next
 * full GC, per concurrent upload. Spooled, it costs a few 64 KiB chunks.
 *
 * The form's plain fields are read from the chunks as they pass (busboy); the file part is never parsed or
 * copied. The file is unlinked as soon as it is created and lives on as an open descriptor only: nothing is
 * left on disk when the request ends, fails, or the process is killed.
 */
export class UploadSpool {
  private constructor(
    private readonly dir: string,
    /** Multipart bodies of this many bytes or more (or of unknown length) are spooled. */
    readonly fromBytes: number,
    private readonly log: Logger,
  ) {}

  /** Creates the directory if needed; a directory that cannot be created refuses the start. */
  static create(dir: string, fromBytes: number, log: Logger): UploadSpool {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    } catch (err) {
      throw new Error(`server.upload_spool_dir: cannot create ${dir}: ${(err as Error).message}`);
    }
    return new UploadSpool(dir, fromBytes, log);
  }

  /** True for a multipart body large enough to spool, or sent without a length (chunked). */
  wants(req: IncomingMessage): boolean {
    const declared = req.headers['content-length'];
    return declared === undefined || Number(declared) >= this.fromBytes;
  }

  /** Receives the body into a temporary file while reading the form's plain fields. */
  async receive(req: IncomingMessage, limit: number, contentType: string): Promise<SpooledUpload> {
    refuseDeclaredOverLimit(req, limit);
    const fields = multipartFieldReader(contentType);
    const path = join(this.dir, `tollgate-upload-${process.pid}-${randomUUID()}`);
    // Two descriptors, each owned (and closed once) by one stream: the writer's, then the reader's. Plain
    // descriptors, not FileHandles: their streams work through callbacks, not promises.
    const writeFd = await openFd(path, 'wx', 0o600).catch((err) => Promise.reject(this.storageFailed(err)));
    const readFd = await openFd(path, 'r').catch((err) => {
      close(writeFd, () => unlink(path).catch(() => undefined));
      return Promise.reject(this.storageFailed(err));
    });
    // Gone from the directory at once; the descriptors keep the data. (Where an open file cannot be unlinked,
    // as on Windows, it is removed once the upload is disposed of.)
    const leftover = await unlink(path).then(() => undefined, () => path);
    const removeLeftover = () => void (leftover && unlink(leftover).catch(() => undefined));
    return receiveBody(req, limit, (control) => {
      const out = createWriteStream('', { fd: writeFd, highWaterMark: 256 * 1024 });
      out.on('drain', control.resume);
      const written = new Promise<void>((resolve, reject) => {
        out.once('finish', resolve);
        out.on('error', (err) => {
          const refused = this.storageFailed(err);
          control.fail(refused); // while the body is still arriving
          reject(refused); // once it has ended
        });
      });
      written.catch(() => undefined); // observed through control.fail when it fails early
      void fields.failed.then(control.fail);
      return {
        write(chunk) {
          fields.write(chunk);
          return out.write(chunk);
        },
        async end(size) {
          out.end();
          const [values] = await Promise.all([fields.end(), written]);
          return new SpooledUpload(readFd, size, values, removeLeftover);
        },
        abort() {
          out.destroy();
          close(readFd, removeLeftover);
        },
      };
    });
  }

  private storageFailed(err: unknown): GatewayError {
    this.log.error({ err, dir: this.dir }, 'upload could not be spooled to disk');
    return new GatewayError('upload_storage_failed', 'The gateway could not store the upload temporarily; retry later.', { cause: err });
  }
}

/** Read back in large pieces: fewer reads and fewer socket writes upstream. */
const READ_CHUNK = 1024 * 1024;

/** A received upload: its plain fields, its size, and its bytes to send upstream (read back from the file). */
export class SpooledUpload {
  private reader: Readable | undefined;
  private disposed = false;

  constructor(
    private readonly fd: number,
    readonly size: number,
    readonly fields: Record<string, string>,
    private readonly removeLeftover: () => void,
  ) {}

  /** The whole body from its first byte; one reader per upload, which owns the descriptor from then on. */
  stream(): Readable {
    this.reader = createReadStream('', { fd: this.fd, start: 0, end: Math.max(0, this.size - 1), highWaterMark: READ_CHUNK });
    this.reader.once('close', this.removeLeftover);
    return this.reader;
  }

  /** Closes the file (once the upstream call is over, or if it never happened). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.reader) this.reader.destroy();
    else close(this.fd, this.removeLeftover);
  }
}

function openFd(path: string, flags: string, mode?: number): Promise<number> {
  return new Promise((resolve, reject) => open(path, flags, mode, (err, fd) => (err ? reject(err) : resolve(fd))));
}
