import SonicBoom from 'sonic-boom';

/** The destinations of this process (one, for the CLI), drained when it exits: one listener for all of them. */
const open = new Set<LogDestination>();
let exitHooked = false;

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  // beforeExit: the event loop still runs; exit: the last chance, written synchronously.
  process.on('beforeExit', () => open.forEach((d) => d.flush()));
  process.on('exit', () => open.forEach((d) => d.flushSync()));
}

/**
 * Where the gateway's log lines go: gathered into blocks of at least `blockChars` characters, each handed to an
 * asynchronous SonicBoom as one write, and at least every `flushMs` when traffic is low.
 *
 * SonicBoom can batch by itself (its minLength), but it appends each line to the block it is building and then
 * measures that block's UTF-8 length, which flattens the whole block on every line: several times the CPU and
 * garbage of gathering the lines here (its block was the largest allocation of a request).
 * Lines keep their order; flush() and flushSync() hand over what is gathered first, and nothing is held past
 * process exit.
 */
export class LogDestination {
  private lines: string[] = [];
  private chars = 0;
  private readonly out: SonicBoom;
  private broken = false;

  constructor(
    fd: number,
    private readonly blockChars = 4096,
    flushMs = 200,
  ) {
    this.out = new SonicBoom({ fd, sync: false });
    this.out.on('error', (err: NodeJS.ErrnoException) => {
      // The reader went away (EPIPE) or the file cannot be written: drop lines from now on, never crash for a log.
      this.broken = true;
      this.lines = [];
      process.stderr.write(`tollgate: log output failed (${err.code ?? err.message}); further log lines are dropped\n`);
    });
    setInterval(() => this.handOver(), flushMs).unref();
    open.add(this);
    hookExit();
  }

  write(line: string): void {
    if (this.broken) return;
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= this.blockChars) this.handOver();
  }

  /** Hands what is gathered to SonicBoom, which writes it at once (pino's logger.flush; shutdown calls it). */
  flush(cb?: (err?: Error) => void): void {
    this.handOver();
    if (this.broken) return cb?.();
    this.out.flush(cb);
  }

  /** Writes everything now, synchronously (process exit). */
  flushSync(): void {
    this.handOver();
    if (this.broken) return;
    try {
      this.out.flushSync();
    } catch {
      // EAGAIN on a full pipe at exit: nothing more can be done synchronously
    }
  }

  private handOver(): void {
    if (this.lines.length === 0 || this.broken) return;
    const block = this.lines.length === 1 ? this.lines[0] : this.lines.join('');
    this.lines = [];
    this.chars = 0;
    this.out.write(block);
  }
}
