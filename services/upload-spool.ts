import { randomUUID } from 'node:crypto';
import { close, createReadStream, createWriteStream, mkdirSync, open, type WriteStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { bodyRelayed, bodySpooled } from '../core/body-memory';
import { GatewayError } from '../core/errors';
import type { FileHead, ReceivedUpload, UploadReceiver } from '../core/upload';
import { receiveBody, refuseDeclaredOverLimit, type BodyControl, type BodySink } from '../intake/body';
import { multipartFieldReader, type MultipartFieldReader } from '../intake/multipart';

/**
 * Large multipart uploads (audio to transcribe, images to edit). Routing needs the form's `model` field:
 *
 * - When it comes before the first file part (Python's SDK sends its plain fields first, as do most `curl -F`
 *   command lines) and the body's length is declared, the upload is routed as soon as the file part begins and
 *   its bytes stream through to the provider as they arrive, as a plain proxy would send them: the provider
 *   starts receiving while the client is still sending. Fields after the file are forwarded but not read.
 * - Otherwise (the Node SDK keeps the caller's key order, `{ file, model }`, so the file often comes first; or
 *   the body is chunked) it is received whole first, into a temporary file, not memory, the way nginx buffers
 *   request bodies: held in memory, each concurrent upload would raise RSS by several times its size until the
 *   next full GC. Spooled, it costs a few 64 KiB chunks; the provider gets it with its length.
 *
 * The form's plain fields are read from the chunks as they pass (busboy); the file part is never parsed or
 * copied. The file is unlinked as soon as it is created and lives on as an open descriptor only: nothing is
 * left on disk when the request ends, fails, or the process is killed.
 */
/** Chunks kept before the first file part: plain fields are small; a form with more before its file is spooled. */
const MAX_HEAD_BYTES = 256 * 1024;

export class UploadSpool implements UploadReceiver {
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
      throw new Error(`server.upload_spool_dir: cannot create ${dir}: ${(err as Error).message}`, { cause: err });
    }
    return new UploadSpool(dir, fromBytes, log);
  }

  /** True for a multipart body large enough to spool, or sent without a length (chunked). */
  wants(req: IncomingMessage): boolean {
    const declared = req.headers['content-length'];
    return declared === undefined || Number(declared) >= this.fromBytes;
  }

  /**
   * Receives an upload while reading the form's plain fields. It goes to a temporary file, unless its model is
   * known when its first file part begins and its length was declared: it is then routed at once and streams
   * through (ReceivedUpload.stream() gives the bytes read so far, then the rest as it arrives).
   */
  async receive(req: IncomingMessage, limit: number, contentType: string, headBytes = 0): Promise<ReceivedUpload> {
    refuseDeclaredOverLimit(req, limit);
    const fields = multipartFieldReader(contentType, headBytes);
    const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
    const file = await this.openSpoolFile();
    return new Promise((resolve, reject) => {
      let sink: SpoolSink | undefined;
      const storageFailed = (err: unknown) => this.storageFailed(err);
      receiveBody(
        req,
        limit,
        (control) => (sink = new SpoolSink(file, fields, declared, control, resolve, storageFailed)),
      ).then(
        (spooled) => spooled && resolve(spooled),
        (err: unknown) => sink?.through || reject(err),
      );
    });
  }

  /** A temporary file, open for writing and for reading, and already unlinked where the system allows it. */
  private async openSpoolFile(): Promise<SpoolFile> {
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
    const leftover = await unlink(path).then(
      () => undefined,
      () => path,
    );
    const removeLeftover = () => void (leftover && unlink(leftover).catch(() => undefined));
    return { writeFd, readFd, removeLeftover };
  }

  private storageFailed(err: unknown): GatewayError {
    this.log.error({ err, dir: this.dir }, 'upload could not be spooled to disk');
    return new GatewayError(
      'upload_storage_failed',
      'The gateway could not store the upload temporarily; retry later.',
      { cause: err },
    );
  }
}

interface SpoolFile {
  writeFd: number;
  readFd: number;
  /** Removes the file where it could not be unlinked while open. */
  removeLeftover: () => void;
}

/**
 * Takes an upload's chunks as they arrive: into the form reader and the spool file, or, once its model is known
 * when its first file part begins and its length was declared, on to a stream that relays them as they come.
 */
class SpoolSink implements BodySink<ReceivedUpload | undefined> {
  /** Set once the upload streams through: its chunks go there, the file is dropped. */
  through: Readable | undefined;
  private readonly out: WriteStream;
  private readonly written: Promise<void>;
  /**
   * The chunks before the first file part (also written to the file), kept until it is known whether the upload
   * can stream through; dropped once it cannot.
   */
  private head: Buffer[] | undefined;
  private headBytes = 0;
  /**
   * The memory policy hears of an upload received whole until it is disposed of, and of each chunk of one that
   * streams through (core/body-memory.ts).
   */
  private release: (() => void) | undefined;
  private readonly fileHead = () => this.fields.fileHead;

  constructor(
    private readonly file: SpoolFile,
    private readonly fields: MultipartFieldReader,
    private readonly declared: number | undefined,
    private readonly control: BodyControl,
    private readonly streamed: (upload: StreamedUpload) => void,
    storageFailed: (err: unknown) => GatewayError,
  ) {
    this.out = createWriteStream('', { fd: file.writeFd, highWaterMark: 256 * 1024 });
    this.out.on('drain', control.resume);
    this.written = new Promise<void>((resolveWritten, rejectWritten) => {
      this.out.once('finish', resolveWritten);
      this.out.on('error', (err) => {
        const refused = storageFailed(err);
        control.fail(refused); // while the body is still arriving
        rejectWritten(refused); // once it has ended
      });
    });
    this.written.catch(() => undefined); // observed through control.fail when it fails early
    // Once streaming through, the form is only read for its file's head: a flaw found there is the provider's to
    // judge, not a reason to cut an upload already on its way.
    void fields.failed.then((err) => this.through || control.fail(err));
    this.head = declared === undefined ? undefined : [];
    if (!this.head) this.spooling();
  }

  write(chunk: Buffer): boolean {
    // Once streaming, the form is no longer parsed; after dispose() the rest of the body is dropped.
    if (this.through) {
      bodyRelayed(chunk.length);
      const more = this.through.destroyed || this.through.push(chunk);
      // The file's first bytes are read as they pass, after the chunk went on its way (headBytes).
      if (this.fields.wantsHead) this.fields.write(chunk);
      return more;
    }
    this.fields.write(chunk);
    if (this.head) {
      this.head.push(chunk);
      this.headBytes += chunk.length;
      if (this.fields.fileStarted && this.fields.fields.model !== undefined) {
        this.streamThrough(this.declared!, this.head);
        return true;
      }
      if (this.fields.fileStarted || this.headBytes > MAX_HEAD_BYTES) {
        this.head = undefined;
        this.spooling();
      }
    }
    return this.out.write(chunk);
  }

  async end(size: number): Promise<ReceivedUpload | undefined> {
    if (this.through) {
      this.through.push(null);
      return undefined;
    }
    this.out.end();
    const [values] = await Promise.all([this.fields.end(), this.written]);
    return new SpooledUpload(this.file.readFd, size, values, this.file.removeLeftover, this.spooling(), this.fileHead);
  }

  abort(): void {
    if (this.through) {
      // The upstream call reading it fails, so the provider's request is cut too.
      this.through.destroy(
        new GatewayError('request_aborted', 'The client closed the connection before the upload ended'),
      );
      return;
    }
    this.out.destroy();
    close(this.file.readFd, this.file.removeLeftover);
    this.release?.();
  }

  private spooling(): () => void {
    return (this.release ??= bodySpooled());
  }

  private streamThrough(size: number, chunks: Buffer[]): void {
    this.through = new Readable({ highWaterMark: 256 * 1024, read: this.control.resume });
    for (const chunk of chunks) this.through.push(chunk);
    this.out.destroy(); // the file is not needed
    close(this.file.readFd, this.file.removeLeftover);
    this.streamed(new StreamedUpload(size, { ...this.fields.fields }, this.through, this.fileHead));
  }
}

/** Read back in large pieces: fewer reads and fewer socket writes upstream. */
const READ_CHUNK = 1024 * 1024;

/** An upload whose model came before its first file part: routed then, its bytes relayed as they arrive. */
class StreamedUpload implements ReceivedUpload {
  constructor(
    readonly size: number,
    readonly fields: Record<string, string>,
    private readonly body: Readable,
    readonly fileHead: () => FileHead | undefined,
  ) {}

  stream(): Readable {
    return this.body;
  }

  /** The upstream call is over: the rest of the body, if any, is read and dropped. */
  dispose(): void {
    this.body.destroy();
  }
}

/** An upload received whole into the spool file, read back from it. */
class SpooledUpload implements ReceivedUpload {
  private reader: Readable | undefined;
  private disposed = false;

  constructor(
    private readonly fd: number,
    readonly size: number,
    readonly fields: Record<string, string>,
    private readonly removeLeftover: () => void,
    /** Tells the memory policy the spooled body is gone (bodySpooled). */
    private readonly release: () => void,
    readonly fileHead: () => FileHead | undefined,
  ) {}

  /** The whole body from its first byte; one reader per upload, which owns the descriptor from then on. */
  stream(): Readable {
    this.reader = createReadStream('', {
      fd: this.fd,
      start: 0,
      end: Math.max(0, this.size - 1),
      highWaterMark: READ_CHUNK,
    });
    this.reader.once('close', this.removeLeftover);
    return this.reader;
  }

  /** Closes the file (once the upstream call is over, or if it never happened). */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.release();
    if (this.reader) this.reader.destroy();
    else close(this.fd, this.removeLeftover);
  }
}

function openFd(path: string, flags: string, mode?: number): Promise<number> {
  return new Promise((resolve, reject) => open(path, flags, mode, (err, fd) => (err ? reject(err) : resolve(fd))));
}
