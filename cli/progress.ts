/**
 * Progress of a long CLI pass (`usage reprice` over a large store), as a line on stderr at most every
 * `everyMs`: stdout keeps only the result, so it can be piped. One small function on purpose: a progress-bar
 * library can replace it without touching the commands that report through it.
 */
export function progressReporter(label: string, total: number, everyMs = 2000, write: (line: string) => void = (l) => process.stderr.write(l)) {
  const started = Date.now();
  let last = started;
  return {
    /** `done` items so far; prints when `everyMs` passed since the last line. */
    tick(done: number): void {
      const now = Date.now();
      if (now - last < everyMs) return;
      last = now;
      const pct = total > 0 ? ` (${Math.min(100, Math.floor((done * 100) / total))}%)` : '';
      write(`${label}: ${done} of ${total} records${pct}, ${Math.round((now - started) / 1000)} s\n`);
    },
  };
}
