import cluster from 'node:cluster';

/** Environment variable carrying a worker's slot (1..N) in multi-core mode; a replacement worker keeps the slot. */
export const WORKER_INDEX_ENV = 'TOLLGATE_WORKER_INDEX';

/** This process's worker slot (1..N), or undefined outside multi-core mode. */
export function workerIndex(): number | undefined {
  const n = Number(process.env[WORKER_INDEX_ENV]);
  return cluster.isWorker && Number.isInteger(n) && n >= 1 ? n : undefined;
}

/**
 * A per-process file path (the usage spill file: two processes must not share one). Worker 1 and a single
 * process use the path as configured; worker k > 1 uses `<path>.worker-k`, replayed whenever worker k runs again.
 */
export function workerScopedPath(path: string): string {
  const i = workerIndex();
  return i !== undefined && i > 1 ? `${path}.worker-${i}` : path;
}
