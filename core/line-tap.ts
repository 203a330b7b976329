import { SideInflater } from './side-inflater';
import type { BatchResultLine, BatchWire } from './usage';

/** Longest results line read for its usage; a longer one is passed on unread. */
const MAX_LINE_BYTES = 8 << 20;

/**
 * Watches a batch's results (JSON Lines) on their way to the client: splits the bytes into lines as they pass and
 * keeps what each answered line says about its usage, never the file. Like StreamTap it reads copies of chunks
 * already handed to the client, so it can neither delay nor change them; compressed bodies are inflated on the side.
 */
export class LineTap {
  private readonly lines: BatchResultLine[] = [];
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** The current line grew past MAX_LINE_BYTES: skip to its end. */
  private skipping = false;
  private readonly source: SideInflater;

  constructor(
    private readonly wire: BatchWire,
    contentEncoding: string | undefined,
  ) {
    this.source = new SideInflater(contentEncoding, (plain) => this.consume(plain));
  }

  push(chunk: Buffer): void {
    this.source.push(chunk);
  }

  /** Call once the body ended (or was cut); resolves when every complete line was read. */
  async end(): Promise<void> {
    await this.source.end();
    if (!this.skipping && this.pendingBytes > 0) this.read(Buffer.concat(this.pending)); // a last line without "\n"
    this.pending = [];
  }

  /** The answered lines seen, in order. */
  results(): readonly BatchResultLine[] {
    return this.lines;
  }

  private consume(bytes: Buffer): void {
    let from = 0;
    for (let nl = bytes.indexOf(10); nl !== -1; nl = bytes.indexOf(10, from)) {
      if (!this.skipping)
        this.read(
          this.pendingBytes > 0 ? Buffer.concat([...this.pending, bytes.subarray(from, nl)]) : bytes.subarray(from, nl),
        );
      this.pending = [];
      this.pendingBytes = 0;
      this.skipping = false;
      from = nl + 1;
    }
    if (from >= bytes.length || this.skipping) return;
    this.pending.push(Buffer.from(bytes.subarray(from))); // a copy: the chunk's buffer may be reused
    this.pendingBytes += bytes.length - from;
    if (this.pendingBytes > MAX_LINE_BYTES) {
      this.skipping = true;
      this.pending = [];
      this.pendingBytes = 0;
    }
  }

  private read(line: Buffer): void {
    if (line.length === 0 || (line.length === 1 && line[0] === 13)) return;
    try {
      const result = this.wire.result(JSON.parse(line.toString('utf8')));
      if (result) this.lines.push(result);
    } catch {
      // Not JSON: the client gets it as sent; no record is made of it.
    }
  }
}
