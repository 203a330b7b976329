import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';

const decoders: Record<string, (b: Buffer) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  'x-gzip': promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};

/**
 * Parses a complete JSON response body for usage, inflating it first when the upstream compressed it.
 * The client still receives the original bytes; this is a read-only copy. Undefined when it cannot be read.
 * An uncompressed body (the usual case) is parsed at once, without a turn of the event loop.
 */
export function decodeBody(body: Buffer, contentEncoding: string | undefined): unknown {
  const encoding = contentEncoding?.trim().toLowerCase();
  if (!encoding || encoding === 'identity') return parse(body);
  const inflate = decoders[encoding];
  return inflate ? inflate(body).then(parse, () => undefined) : undefined;
}

function parse(plain: Buffer): unknown {
  try {
    return JSON.parse(plain.toString('utf8'));
  } catch {
    return undefined;
  }
}
