import { Writable } from 'node:stream';
import { sleep } from '../helpers/wait';
import { expect } from 'chai';
import { Readiness } from '../../runtime/observability/readiness';
import { createLogger } from '../../runtime/logger';

const quiet = createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() }));

describe('readiness checks (runtime/observability/readiness.ts)', () => {
  it('run a dependency check at most once per ttl, however many probes arrive, concurrent ones sharing one run', async () => {
    let runs = 0;
    const readiness = new Readiness(
      { storeWritable: async () => void runs++, draining: () => false, logger: quiet },
      { ttlMs: 300 },
    );
    await Promise.all(Array.from({ length: 50 }, () => readiness.report()));
    for (let i = 0; i < 20; i++) expect((await readiness.report()).ready).to.equal(true);
    expect(runs).to.equal(1);
    await sleep(350);
    await readiness.report();
    expect(runs).to.equal(2);
  });

  it('a check that hangs fails after the time-out instead of holding the probe', async () => {
    const readiness = new Readiness(
      {
        storeWritable: async () => undefined,
        limitStorePing: () => new Promise(() => undefined),
        draining: () => false,
        failOn: new Set(['limit_store']),
        logger: quiet,
      },
      { timeoutMs: 100 },
    );
    const started = performance.now();
    const report = await readiness.report();
    expect(performance.now() - started).to.be.below(1000);
    expect(report).to.deep.equal({
      ready: false,
      checks: { store: 'ok', limit_store: 'failed', shutdown: 'ok' },
      failed: ['limit_store'],
      degraded: [],
    });
  });

  it('draining is read at every probe, never cached', async () => {
    let draining = false;
    const readiness = new Readiness(
      { storeWritable: async () => undefined, draining: () => draining, logger: quiet },
      { ttlMs: 60_000 },
    );
    expect((await readiness.report()).ready).to.equal(true);
    draining = true;
    expect(await readiness.report()).to.deep.equal({
      ready: false,
      checks: { store: 'ok', limit_store: 'not_configured', shutdown: 'draining' },
      failed: ['shutdown'],
      degraded: [],
    });
  });

  it('a dependency down that is not in failOn leaves the instance ready, degraded; one in failOn fails it', async () => {
    const down = async () => {
      throw new Error('connection refused');
    };
    const deps = { storeWritable: down, limitStorePing: down, draining: () => false, logger: quiet };
    expect(await new Readiness(deps).report()).to.deep.equal({
      ready: true,
      checks: { store: 'failed', limit_store: 'failed', shutdown: 'ok' },
      failed: [],
      degraded: ['store', 'limit_store'],
    });
    expect(await new Readiness({ ...deps, failOn: new Set(['store']) }).report()).to.deep.equal({
      ready: false,
      checks: { store: 'failed', limit_store: 'failed', shutdown: 'ok' },
      failed: ['store'],
      degraded: ['limit_store'],
    });
  });
});
