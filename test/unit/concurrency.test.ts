import { expect } from 'chai';
import { gatewayConfigSchema } from '../../config/schema';
import type { GatewayError } from '../../core/errors';
import { captureLogs, createPluginHarness, createTestContext, type PluginHarness } from '../../testing';
import { MemoryLimitStore } from '../../services/limit-store/memory-store';
import { concurrency } from '../../plugins/concurrency';
import { failingLimitStore } from '../helpers/failing-limit-store';

/** A store as Redis is to the plugin: every operation through a promise (no LimitStore.immediate). */
function withoutImmediate(store: MemoryLimitStore): MemoryLimitStore {
  (store as unknown as { immediate: undefined }).immediate = undefined;
  return store;
}

const STORES = {
  'in memory (answered at once)': (s: MemoryLimitStore) => s,
  'through promises (as Redis)': withoutImmediate,
};

/** The concurrency plugin as the gateway builds it, for one workspace's limits. */
async function limited(limits: Record<string, unknown>, store: MemoryLimitStore, onError = 'open') {
  const config = gatewayConfigSchema.parse({
    workspaces: [{ id: 'default', limits }],
    limit_store: { on_error: onError },
  });
  const { logger, lines } = captureLogs('warn');
  const harness = await createPluginHarness(concurrency, {
    services: { Config: config, LimitStore: store, Logger: logger },
  });
  return { harness, lines };
}

/** What a request's own log holds: a plugin that throws in onComplete is logged there, not passed on. */
const requestLog = captureLogs('warn');

/** A stream admitted or refused; `done` completes it (its slot is given back). */
async function open(harness: PluginHarness, tags: Record<string, string> = {}) {
  const ctx = createTestContext({ model: 'gpt-4o-mini', stream: true, tags, log: requestLog.logger });
  let refusal: GatewayError | undefined;
  try {
    await harness.run('beforeUpstream', ctx);
  } catch (err) {
    refusal = err as GatewayError;
  }
  ctx.error = refusal;
  return { refusal, done: () => harness.complete(ctx) };
}

describe('concurrency plugin', () => {
  beforeEach(() => requestLog.lines.splice(0));
  afterEach(() => expect(requestLog.lines, 'nothing failed inside the plugin').to.deep.equal([]));

  for (const [name, storeOf] of Object.entries(STORES)) {
    describe(`with a limit store ${name}`, () => {
      it('concurrent_streams: 1 per workspace and per customer_id: a second open stream is refused until the first ends', async () => {
        const store = storeOf(new MemoryLimitStore());
        const { harness } = await limited(
          { concurrent_streams: 2, per_tag: { customer_id: { concurrent_streams: 1 } } },
          store,
        );
        const first = await open(harness, { customer_id: 'acme' });
        expect(first.refusal).to.equal(undefined);
        const second = await open(harness, { customer_id: 'acme' });
        expect(second.refusal?.code).to.equal('concurrency_limited');
        expect(second.refusal?.status).to.equal(429);
        expect(second.refusal?.headers).to.deep.equal({ 'retry-after': '1' });
        await second.done(); // the workspace slot it took before its customer's was refused is given back
        expect((await open(harness, { customer_id: 'other' })).refusal).to.equal(undefined); // workspace: 2 of 2
        const third = await open(harness, { customer_id: 'third' });
        expect(third.refusal?.message).to.equal(
          'Too many open streams for workspace default: 2 at most. Retry when one ends.',
        );
        await third.done();
        await first.done();
        expect((await open(harness, { customer_id: 'acme' })).refusal).to.equal(undefined);
        await store.close();
      });

      it('a store that cannot be reached: streams open (on_error open), logged once as "concurrent streams"', async () => {
        const store = storeOf(failingLimitStore('acquireSlot'));
        const { harness, lines } = await limited({ concurrent_streams: 1 }, store);
        const a = await open(harness);
        const b = await open(harness);
        expect([a.refusal, b.refusal]).to.deep.equal([undefined, undefined]);
        await a.done();
        await b.done();
        expect(lines.map((l) => [l.what, l.policy])).to.deep.equal([['concurrent streams', 'open']]);
        await store.close();
      });

      it('a store that cannot be reached with on_error closed: 503 limits_unavailable', async () => {
        const store = storeOf(failingLimitStore('acquireSlot'));
        const { harness } = await limited({ concurrent_streams: 1 }, store, 'closed');
        const { refusal, done } = await open(harness);
        expect([refusal?.code, refusal?.status]).to.deep.equal(['limits_unavailable', 503]);
        await done();
        await store.close();
      });

      it('a slot that cannot be given back fails quietly: the stream completes (the slot lapses with its lease)', async () => {
        const store = storeOf(failingLimitStore('releaseSlot'));
        const { harness } = await limited({ concurrent_streams: 1 }, store);
        const { refusal, done } = await open(harness);
        expect(refusal).to.equal(undefined);
        await done();
        expect((await open(harness)).refusal?.code).to.equal('concurrency_limited');
        await store.close();
      });
    });
  }
});
