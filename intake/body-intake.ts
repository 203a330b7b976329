import type { IncomingMessage } from 'node:http';
import { bodyHeld, JSON_BODY_COPIES, type BodyMemoryBudget, type BufferedBound } from '../core/body-memory';
import type { BodyReader, HeldBody } from '../core/body-reader';
import type { GatewayContext } from '../core/context';
import type { EndpointKey, EndpointSpec } from '../core/endpoints';
import { GatewayError } from '../core/errors';
import type { UploadReceiver } from '../core/upload';
import { modelField, parseJsonBody, readBody } from './body';
import type { BodyPace } from './body-pace';
import { multipartForm } from './multipart';

export interface BodyIntakeOptions {
  bodyLimit: number;
  /** Where large multipart uploads are received; absent: in memory. */
  uploads?: UploadReceiver;
  /** Bounds the request-body bytes held in memory across requests; absent: no bound but bodyLimit per request. */
  memoryBudget?: BodyMemoryBudget;
  /** How long a body read into memory may take to arrive; absent: no time-out of the gateway's own. */
  bodyPace?: BodyPace;
  /** How many bytes of an upload's first file part to keep (an audio file's header); absent: none. */
  uploadHeadBytes?: (key: EndpointKey) => number;
}

/**
 * A body of unknown length (chunked) reserves one socket read's worth before its first byte, then grows its
 * reservation chunk by chunk as it arrives.
 */
const FIRST_READ_BYTES = 64 * 1024;

/**
 * Reads a request's body for the proxy and parses only what routing and limits need (model, stream); the bytes
 * themselves are forwarded unchanged.
 *
 * - A large multipart upload goes through the upload spool: streamed through, or received into a temporary file.
 *   Either way it holds a few chunks of memory, not its size, and takes nothing from the memory budget.
 * - Any other body is read whole into memory, within the budget (server.max_buffered_bytes): a declared length is
 *   reserved before a byte is read (a JSON body twice: JSON_BODY_COPIES); a body sent without one is counted as it
 *   arrives. Each workspace (and key) has its share of the budget. A body that does not fit is refused with
 *   503 gateway_busy and Retry-After, and the connection is closed rather than read to its end; one that arrives
 *   too slowly (bodyPace) with 408 body_timeout, the same way.
 */
export class BodyIntake implements BodyReader {
  constructor(private readonly options: BodyIntakeOptions) {}

  async read(gw: GatewayContext, req: IncomingMessage, endpoint: EndpointSpec, hold: HeldBody): Promise<void> {
    if (endpoint.body === 'none') return;
    const { bodyLimit, uploads } = this.options;
    const contentType = req.headers['content-type'] ?? '';
    const multipart = contentType.startsWith('multipart/form-data');
    // Audio uploads keep their file's first bytes, where the duration is read from (providers/wire/media-request.ts).
    const headBytes = this.options.uploadHeadBytes?.(endpoint.key) ?? 0;
    if (multipart && uploads?.wants(req)) {
      const upload = (hold.upload = await uploads.receive(req, bodyLimit, contentType, headBytes));
      gw.bodySize = upload.size;
      routeByForm(gw, upload.fields);
      if (headBytes > 0) gw.uploadHead = () => upload.fileHead();
      return;
    }
    const declared = Number(req.headers['content-length']); // NaN when sent chunked
    hold.owner = { workspace: gw.workspace?.id, key: gw.keyId };
    const received = this.reserve(hold, declared, multipart ? 1 : JSON_BODY_COPIES);
    // A body held whole is reported to the memory policy until the request is over: from the start when its
    // length is declared, once read when it was sent without one.
    hold.held = bodyHeld(declared);
    gw.body = await readBody(req, bodyLimit, received, this.options.bodyPace);
    gw.bodySize = gw.body.length;
    hold.held ??= bodyHeld(gw.bodySize);
    if (multipart) {
      const form = await multipartForm(gw.body, contentType, headBytes);
      routeByForm(gw, form.fields);
      if (headBytes > 0) gw.uploadHead = () => form.head;
      return;
    }
    gw.json = parseJsonBody(gw.body);
    gw.model = modelField(gw.json.model);
    gw.stream = gw.json.stream === true;
  }

  /**
   * Reserves what a body will hold before it is read: `copies` times its declared length (a length over the body
   * limit is left to the 413), or a first read's worth; for the latter, returns what grows the reservation as the
   * body arrives.
   */
  private reserve(hold: HeldBody, declared: number, copies: number): ((size: number) => void) | undefined {
    const budget = this.options.memoryBudget;
    if (!budget || declared > this.options.bodyLimit) return undefined;
    const known = declared >= 0;
    const first = known ? declared * copies : FIRST_READ_BYTES;
    const owner = hold.owner!;
    const refused = budget.reserve(first, owner);
    if (refused) throw gatewayBusy(refused);
    hold.reserved = first;
    if (known) return undefined;
    return (size) => {
      const needed = size * copies;
      if (needed <= hold.reserved) return;
      const over = budget.reserve(needed - hold.reserved, owner);
      if (over) throw gatewayBusy(over);
      hold.reserved = needed;
    };
  }

  /** Once the request is over (its upstream call done, or never made): disposes of the upload, frees the memory. */
  release(hold: HeldBody): void {
    hold.upload?.dispose(); // its body was sent, or never will be
    hold.held?.();
    hold.held = undefined;
    if (hold.reserved > 0) this.options.memoryBudget!.release(hold.reserved, hold.owner!);
    hold.reserved = 0;
  }
}

const WHOSE: Record<BufferedBound, string> = {
  max_buffered_bytes: 'The gateway holds',
  workspace_buffered_bytes: "This workspace's requests hold",
  key_buffered_bytes: "This key's requests hold",
};

function gatewayBusy(bound: BufferedBound): GatewayError {
  return new GatewayError(
    'gateway_busy',
    `${WHOSE[bound]} as many request bodies in memory as they may (server.${bound}); retry shortly.`,
    { headers: { 'retry-after': '1' } },
  );
}

/** Model and stream flag from a multipart form's plain fields. */
function routeByForm(gw: GatewayContext, fields: Record<string, string>): void {
  gw.form = fields;
  gw.model = modelField(fields.model);
  gw.stream = fields.stream === 'true';
}
