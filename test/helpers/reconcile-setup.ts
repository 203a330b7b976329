import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UsageRecord } from '../../records/usage-record';
import { openStore } from '../../storage';
import { providerAdminApi } from './provider-admin-api';
import { TestUpstream } from './upstream';

/** Where a reconciliation suite's CLI runs: the admin-API server, and a folder with the config file and the store. */
export interface ReconcileSetup {
  readonly upstream: TestUpstream;
  dir: string;
  config: string;
  db: string;
}

/**
 * Sets a reconciliation up as a user has it, for the suite it is called in: a loopback server answering like the
 * providers' admin APIs (providerAdminApi), a config file (`yaml`, given the server's URL and the store's URL) and a
 * SQLite store holding the gateway's `records`. All of it is removed after the suite.
 */
export function useReconcileSetup(
  name: string,
  yaml: (upstreamUrl: string, storeUrl: string) => string,
  records: () => UsageRecord[],
): ReconcileSetup {
  const setup: ReconcileSetup = { upstream: new TestUpstream(), dir: '', config: '', db: '' };
  before(async () => {
    await setup.upstream.start();
    setup.upstream.respondWith(providerAdminApi);
    setup.dir = mkdtempSync(join(tmpdir(), `tollgate-${name}-`));
    setup.db = join(setup.dir, 'tollgate.db');
    setup.config = join(setup.dir, 'gateway.yaml');
    writeFileSync(setup.config, yaml(setup.upstream.url, `sqlite:${setup.db}`));
    const store = await openStore(`sqlite:${setup.db}`, { writerThread: false });
    await store.migrate();
    await store.insertBatch(records());
    await store.close();
  });
  after(async () => {
    await setup.upstream.stop();
    rmSync(setup.dir, { recursive: true, force: true });
  });
  return setup;
}
