/**
 * The admin API's reader thread (admin/reads/admin-reads.ts starts it): its own read connection to the store, the
 * reads of admin/reads/read-ops.ts, at the lowest CPU priority so that the proxy's thread comes first for a core.
 */
import { workerData } from 'node:worker_threads';
import { openReadConnection, type ReadSource } from '../../storage/read-connection';
import { serveReads } from '../../storage/serve-reads';
import { lowerThisThreadPriority } from '../../storage/thread-priority';
import { readOps } from './read-ops';

export interface ReaderWorkerData {
  source: Exclude<ReadSource, { kind: 'inline' }>;
  timeoutMs: number;
  /** admin.exports_max: the PostgreSQL connections of exports (storage/read-connection.ts). */
  exportsMax: number;
}

const { source, timeoutMs, exportsMax } = workerData as ReaderWorkerData;
lowerThisThreadPriority();
serveReads(readOps(openReadConnection(source, { timeoutMs, exportsMax })));
