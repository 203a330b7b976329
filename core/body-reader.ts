import type { IncomingMessage } from 'node:http';
import type { BodyOwner } from './body-memory';
import type { GatewayContext } from './context';
import type { EndpointSpec } from './endpoints';
import type { ReceivedUpload } from './upload';

/**
 * How the proxy has a request's body read: within what limits, into memory or through the upload spool, and how
 * its plain fields are parsed is the reader's business (the runtime gives intake/body-intake.ts).
 */
export interface BodyReader {
  /**
   * Reads the body of `endpoint` and fills in what routing and the plugins read (gw.body, json or form, model,
   * stream, bodySize, uploadHead); records what the body holds in `hold`. Throws the refusal (413, 408, 503 ...).
   */
  read(gw: GatewayContext, req: IncomingMessage, endpoint: EndpointSpec, hold: HeldBody): Promise<void>;
  /** Once the request is over (its upstream call done, or never made), also after a refused read: frees `hold`. */
  release(hold: HeldBody): void;
}

/** What a request's body holds until the request is over; BodyReader.release frees it, once. */
export interface HeldBody {
  /** A large multipart upload, received into the spool or streaming through (services/upload-spool.ts). */
  upload: ReceivedUpload | undefined;
  /** Bytes of the memory budget reserved for the body, and whose share they count against. */
  reserved: number;
  owner?: BodyOwner;
  /** Ends the memory policy's hold on a body held whole (core/body-memory.ts). */
  held: (() => void) | undefined;
}
