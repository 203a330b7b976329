import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { ConfigError, type LoadedConfig } from '../config/load';
import { LIMIT_MODIFIERS } from '../config/limits';
import { openStore, parseStorageUrl } from '../storage';
import { storageUrlFrom } from './gateway';
import { bootstrapKeys } from './key-bootstrap';
import { serveWorkerMetrics } from './observability/open-metrics';
import { prepareWiring } from './wiring';
import { WORKER_INDEX_ENV } from './worker-slot';

/**
 * Multi-core mode: one gateway process per core (server.workers or `tollgate start --workers N`), all serving
 * the same port through node:cluster (the primary accepts connections and hands them to the workers in turn).
 * Each worker is a complete gateway: its own plugins, upstream pools and write queue, the shared usage store.
 * Limits are per process unless limit_store.redis_url is set, in which case every worker uses the same counters.
 */

const SHUTDOWN = 'tollgate:shutdown';

/** The number of gateway processes: the --workers flag, else server.workers; `auto` means one per CPU core. */
export function workerCount(setting: number | string | undefined): number {
  if (setting === undefined) return 1;
  if (setting === 'auto') return availableParallelism();
  const n = typeof setting === 'number' ? setting : Number(setting);
  if (!Number.isInteger(n) || n < 1 || n > 256)
    throw new Error(`workers must be a whole number from 1 to 256, or "auto" (got ${setting})`);
  return n;
}

/** In a worker: calls `stop` when the primary asks every worker to finish (shutdown of the whole gateway). */
export function onPrimaryShutdown(stop: () => void): void {
  if (!cluster.isWorker) return;
  process.on('message', (message) => {
    if (message === SHUTDOWN) stop();
  });
}

/** What every worker would refuse, refused once; the store migrated and its first key created before any fork. */
async function preparePrimary(loaded: LoadedConfig, count: number, write: (line: string) => void): Promise<void> {
  const { config } = loaded;
  const target = parseStorageUrl(config.storage.url);
  if (target.kind === 'sqlite' && target.path === ':memory:') {
    throw new ConfigError(
      'server.workers > 1 needs a store the workers share: an SQLite file or PostgreSQL, not sqlite::memory:',
    );
  }
  await prepareWiring(loaded); // what every worker would refuse, refused before the store is touched
  const store = await openStore(storageUrlFrom(config.storage.url, loaded.dir), { schema: config.storage.schema });
  try {
    await bootstrapKeys(config.workspaces, store, write);
  } finally {
    await store.close();
  }
  const limited = config.workspaces.some((w) => hasLimits(w.limits));
  if (limited && !config.limit_store.redis_url) {
    write(
      `tollgate: warning: ${count} workers keep separate limit counters; set limit_store.redis_url to share rate limits, stream slots and budgets\n`,
    );
  }
}

/**
 * The primary process: prepares the store once (migrations; the first-start key is created and printed here,
 * so workers never create one each), forks `count` workers, replaces a worker that dies, and on SIGTERM or
 * SIGINT asks every worker to finish its in-flight requests and streams, then exits when all have.
 * Resolves with the exit code.
 */
export async function runPrimary(
  loaded: LoadedConfig,
  count: number,
  write: (line: string) => void = (l) => process.stderr.write(l),
): Promise<number> {
  await preparePrimary(loaded, count, write);
  let stopping = false;
  let listening = 0;
  const fork = (index: number): Worker => {
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(index) });
    let up = false;
    worker.once('listening', () => {
      up = true;
      if (++listening === count) write(`Tollgate: ${count} worker processes serve the proxy port\n`);
    });
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      if (!up) {
        // A worker that cannot even start (port taken, bad plugin ...) would fail again: stop everything. Exit
        // code 2 is the CLI's "the user can fix this", and that worker has said what (cli/errors.ts).
        if (code !== 2)
          write(`tollgate: worker ${index} exited before it could serve (code ${code ?? signal}); stopping\n`);
        void shutdown(code === 2 ? 2 : 1);
        return;
      }
      listening--;
      write(`tollgate: worker ${index} exited (code ${code ?? signal}); starting a new one\n`);
      setTimeout(() => {
        if (!stopping) fork(index);
      }, 1000).unref();
    });
    return worker;
  };

  let done: (code: number) => void = () => undefined;
  const finished = new Promise<number>((resolve) => (done = resolve));
  const shutdown = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    const alive = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
    await Promise.all(
      alive.map(
        (w) =>
          new Promise<void>((resolve) => {
            w.once('exit', () => resolve());
            try {
              w.send(SHUTDOWN);
            } catch {
              w.kill('SIGTERM');
            }
          }),
      ),
    );
    done(code);
  };
  let signals = 0;
  const onSignal = () => {
    if (++signals > 1) {
      for (const w of Object.values(cluster.workers ?? {})) w?.kill('SIGKILL');
      done(130);
      return;
    }
    void shutdown(0);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  serveWorkerMetrics(loaded.config.metrics, write);
  for (let i = 1; i <= count; i++) fork(i);
  return finished;
}

function hasLimits(l: Record<string, unknown> | undefined): boolean {
  if (!l) return false;
  return Object.entries(l).some(
    ([k, v]) =>
      k !== 'required_tags' &&
      k !== 'max_tokens' &&
      !LIMIT_MODIFIERS.has(k) &&
      v !== undefined &&
      !(Array.isArray(v) && v.length === 0),
  );
}
