/**
 * `tollgate usage | head -1`: the reader is gone once it has its line, and the next write fails with EPIPE.
 * Nobody is left to read anything, so the CLI exits quietly instead of dying on an unhandled 'error' event.
 */
export function exitQuietlyWhenOutputCloses(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE') process.exit(0);
      throw err;
    });
  }
}
