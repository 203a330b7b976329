import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';

/**
 * Where large multipart uploads are received instead of memory (the runtime gives services/upload-spool.ts):
 * streamed through to the provider once routed, or held in a temporary file until then.
 */
export interface UploadReceiver {
  /** True for a multipart body this receiver takes (large enough, or sent without a length). */
  wants(req: IncomingMessage): boolean;
  /** Receives the upload while reading the form's plain fields, keeping `headBytes` of its first file part. */
  receive(req: IncomingMessage, limit: number, contentType: string, headBytes?: number): Promise<ReceivedUpload>;
}

/** A received upload: its plain fields (those before its first file part when it streams through), its size, and its bytes. */
export interface ReceivedUpload {
  readonly size: number;
  readonly fields: Record<string, string>;
  /** The whole body from its first byte, once. */
  stream(): Readable;
  /** Releases it once the upstream call is over (or never happened). */
  dispose(): void;
  /** The first bytes of its first file part, when they were asked for (receive's headBytes). */
  fileHead(): FileHead | undefined;
}

/** The first bytes of an upload's first file part, with the type and name the client gave it. */
export interface FileHead {
  bytes: Buffer;
  mimeType: string;
  filename: string;
}
