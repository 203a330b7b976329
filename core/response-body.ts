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
 */
export async function decodeBody(body: Buffer, contentEncoding: string | undefined): Promise<unknown> {
  try {
    const encoding = contentEncoding?.trim().toLowerCase();
    const plain = encoding && encoding !== 'identity' ? await decoders[encoding]?.(body) : body;
    return plain === undefined ? undefined : JSON.parse(plain.toString('utf8'));
  } catch {
    return undefined;
  }
}
