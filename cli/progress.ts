/**
 * Progress of a long command on stderr, never stdout (which stays the command's result): a bar (cli-progress)
 * when stderr is a terminal, otherwise a plain line now and then, so that a long run in a pipe, a log or CI
 * is never silent and never fills a log with control characters.
 */
import { Presets, SingleBar } from 'cli-progress';
import { count } from './format';

export interface Progress {
  /** `done` units of the total so far. */
  update(done: number): void;
  stop(): void;
}

interface Output {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** Between two plain progress lines. */
export const LINE_INTERVAL_MS = 5000;

export interface ProgressOptions {
  /**
   * Whether Date.now is the real clock while the work runs. `tollgate demo` moves it along the simulated request
   * times, which would make the bar's elapsed time and ETA (cli-progress reads Date.now) meaningless: they are
   * left out. The plain lines use a monotonic clock of their own.
   */
  realDateNow?: boolean;
}

export function startProgress(
  label: string,
  total: number,
  unit: string,
  opts: ProgressOptions = {},
  out: Output = process.stderr,
): Progress {
  return out.isTTY
    ? new BarProgress(label, total, unit, opts, out as NodeJS.WritableStream)
    : new LineProgress(label, total, unit, out);
}

class BarProgress implements Progress {
  private readonly bar: SingleBar;

  constructor(label: string, total: number, unit: string, opts: ProgressOptions, stream: NodeJS.WritableStream) {
    const times = opts.realDateNow === false ? '' : ' | {duration_formatted}, ETA {eta_formatted}';
    this.bar = new SingleBar(
      {
        stream,
        format: `${label} [{bar}] {percentage}% | {value} of {total} ${unit}${times}`,
        formatValue: (v, _options, type) => (type === 'value' || type === 'total' ? count(v) : String(v)),
        hideCursor: true,
        etaBuffer: 50,
        // An update redraws at most 10 times a second, by Date.now; with Date.now simulated the bar's own timer
        // redraws it instead (it needs the event loop, which the demo's HTTP requests keep turning; a SQLite
        // reprice runs on microtasks only, so there the updates must draw).
        synchronousUpdate: opts.realDateNow !== false,
      },
      Presets.shades_classic,
    );
    this.bar.start(total, 0);
  }

  update(done: number): void {
    if (done > this.bar.getTotal()) this.bar.setTotal(done); // records written meanwhile
    this.bar.update(done);
  }

  stop(): void {
    this.bar.stop();
  }
}

/**
 * One line when the work starts, then one every `intervalMs` while it runs, and one at the end if any was.
 * Elapsed time is read from a monotonic clock (`now` stands in for it in tests).
 */
export class LineProgress implements Progress {
  private readonly started: number;
  private last: number;
  private done = 0;
  private lines = 0;

  constructor(
    private readonly label: string,
    private total: number,
    private readonly unit: string,
    private readonly out: Output,
    private readonly opts: { intervalMs?: number; now?: () => number } = {},
  ) {
    this.started = this.last = this.now();
    out.write(`${label}: ${count(total)} ${unit}\n`);
  }

  private now(): number {
    return this.opts.now ? this.opts.now() : performance.now();
  }

  update(done: number): void {
    this.done = done;
    this.total = Math.max(this.total, done);
    const now = this.now();
    if (now - this.last < (this.opts.intervalMs ?? LINE_INTERVAL_MS)) return;
    this.last = now;
    this.lines++;
    this.line(now);
  }

  stop(): void {
    if (this.lines > 0) this.line(this.now());
  }

  private line(now: number): void {
    const pct = this.total > 0 ? Math.floor((this.done / this.total) * 100) : 100;
    this.out.write(
      `${this.label}: ${count(this.done)} of ${count(this.total)} ${this.unit} (${pct}%), ${Math.round((now - this.started) / 1000)} s\n`,
    );
  }
}
