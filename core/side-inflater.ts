import type { Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/**
 * Hands copies of a response body's chunks to `consume` as plain bytes: as they are, or inflated on the side when
 * the body is compressed. The client gets the chunks themselves, untouched, whatever happens here.
 */
export class SideInflater {
  private readonly inflater: Transform | undefined;
  private readonly drained: Promise<void>;

  constructor(
    contentEncoding: string | undefined,
    private readonly consume: (plain: Buffer) => void,
  ) {
    this.inflater = inflaterFor(contentEncoding);
    const inflater = this.inflater;
    this.drained = inflater
      ? new Promise((resolve) => {
          inflater.on('data', (plain: Buffer) => consume(plain));
          inflater.once('end', resolve);
          inflater.once('error', () => resolve()); // corrupt compression: what follows stays unread, the client is unaffected
        })
      : Promise.resolve();
  }

  push(chunk: Buffer): void {
    if (this.inflater) this.inflater.write(chunk);
    else this.consume(chunk);
  }

  /** Call once the body ended (or was cut); resolves when every inflated byte was consumed. */
  async end(): Promise<void> {
    if (!this.inflater) return;
    this.inflater.end();
    await this.drained;
  }
}

function inflaterFor(encoding: string | undefined): Transform | undefined {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return undefined;
  }
}
