import { expect } from 'chai';
import { gatewayConfigSchema } from '../../config/schema';
import { GatewayError } from '../../core/errors';
import { captureLogs, createTestContext } from '../../testing';
import type { LimitStore } from '../../contracts/limit-store';
import { MemoryLimitStore } from '../../services/limit-store/memory-store';
import { scopesOf } from '../../services/limit-scopes';
import { LimitsContext, tagScope } from '../../services/workspace-limits';

const config = gatewayConfigSchema.parse({
  workspaces: [
    {
      id: 'default',
      limits: {
        requests_per_minute: 60,
        per_tag: { customer_id: { requests_per_minute: 5 }, feature: { concurrent_streams: 2 } },
      },
    },
    { id: 'team-b', limits: { tokens_per_minute: 1000 } },
  ],
});
const limitsOf = (id: string) => config.workspaces.find((w) => w.id === id)!.limits;

function limitsContext(onError: 'open' | 'closed' = 'open', store: LimitStore = new MemoryLimitStore()) {
  const { logger, lines } = captureLogs('warn');
  const context = new LimitsContext(config, store, { ...config.limit_store, on_error: onError }, logger);
  return { context, lines, store };
}

describe('limit scopes', () => {
  describe('scopesOf', () => {
    it('a request falls under its workspace, and under each per-tag limit whose tag it carries', () => {
      const ctx = createTestContext({ tags: { customer_id: 'acme', feature: 'search', other: 'x' } });
      expect(scopesOf(ctx, limitsOf('default'))).to.deep.equal([
        { key: 'ws:default', label: 'workspace default', limits: limitsOf('default') },
        { key: 'ws:default:tag:customer_id=acme', label: 'customer_id=acme', limits: { requests_per_minute: 5 } },
        { key: 'ws:default:tag:feature=search', label: 'feature=search', limits: { concurrent_streams: 2 } },
      ]);
    });

    it('a tag the request does not carry adds no scope', () => {
      const ctx = createTestContext({ tags: { feature: 'chat' } });
      expect(scopesOf(ctx, limitsOf('default')).map((s) => s.key)).to.deep.equal([
        'ws:default',
        'ws:default:tag:feature=chat',
      ]);
      expect(
        scopesOf(createTestContext({ workspace: 'team-b', tags: { customer_id: 'acme' } }), limitsOf('team-b')).map(
          (s) => s.key,
        ),
      ).to.deep.equal(['ws:team-b']);
    });

    it('tag values are encoded in the key, so no value can spell another scope', () => {
      expect(tagScope('customer_id', 'a:b=c d/é')).to.equal('tag:customer_id=a%3Ab%3Dc%20d%2F%C3%A9');
      const ctx = createTestContext({ tags: { customer_id: 'x:tag:feature=search' } });
      expect(scopesOf(ctx, limitsOf('default'))[1]).to.include({
        key: 'ws:default:tag:customer_id=x%3Atag%3Afeature%3Dsearch',
        label: 'customer_id=x:tag:feature=search',
      });
    });
  });

  describe('LimitsContext', () => {
    it("knows each workspace's limits, and none before auth named a workspace", () => {
      const { context } = limitsContext();
      expect(context.limitsOf(createTestContext({ workspace: 'team-b' }))).to.equal(limitsOf('team-b'));
      expect(context.limitsOf(createTestContext({ workspace: 'unknown' }))).to.equal(undefined);
      expect(context.limitsOf(createTestContext({ workspace: null }))).to.equal(undefined);
      expect([...context.byWorkspace.keys()]).to.deep.equal(['default', 'team-b']);
    });

    it('gives the same scope list for the same workspace and tag values, and another one for any difference', () => {
      const { context } = limitsContext();
      const limits = limitsOf('default');
      const of = (tags: Record<string, string>, workspace = 'default') =>
        context.scopesOf(createTestContext({ workspace, tags }), limits);
      const acme = of({ customer_id: 'acme' });
      expect(of({ customer_id: 'acme', unrelated: 'x' })).to.equal(acme);
      expect(Object.isFrozen(acme)).to.equal(true);
      expect(acme.map((s) => s.key)).to.deep.equal(['ws:default', 'ws:default:tag:customer_id=acme']);
      expect(of({ customer_id: 'globex' })).to.not.equal(acme);
      expect(of({})).to.not.equal(acme);
      expect(of({}).map((s) => s.key)).to.deep.equal(['ws:default']);
      expect(of({ customer_id: 'acme' }, 'other')[0].key).to.equal('ws:other');
      // values that would run together in a plain join stay apart
      const a = of({ customer_id: 'a|1:b', feature: 'c' });
      const b = of({ customer_id: 'a', feature: '1:b|c' });
      expect(a).to.not.equal(b);
      expect(a.map((s) => s.label)).to.deep.equal(['workspace default', 'customer_id=a|1:b', 'feature=c']);
      expect(b.map((s) => s.label)).to.deep.equal(['workspace default', 'customer_id=a', 'feature=1:b|c']);
      // an empty value is a value, not an absent tag
      expect(of({ customer_id: '' }).map((s) => s.key)).to.deep.equal(['ws:default', 'ws:default:tag:customer_id=']);
    });

    it('a tag that is absent is told apart from any value of another tag', () => {
      const { context } = limitsContext();
      const limits = limitsOf('default');
      const onlyCustomer = context.scopesOf(createTestContext({ tags: { customer_id: 'x' } }), limits);
      const onlyFeature = context.scopesOf(createTestContext({ tags: { feature: 'x' } }), limits);
      expect(onlyCustomer.map((s) => s.key)).to.deep.equal(['ws:default', 'ws:default:tag:customer_id=x']);
      expect(onlyFeature.map((s) => s.key)).to.deep.equal(['ws:default', 'ws:default:tag:feature=x']);
    });

    it('hands back what the store answered while it works', async () => {
      const { context, lines } = limitsContext('closed');
      expect(await context.guard('test', async () => 42, 0)).to.equal(42);
      expect(lines).to.deep.equal([]);
    });

    it('on_error open: an unreachable store skips the limit, logged once per 10 s', async () => {
      const { context, lines } = limitsContext('open');
      const down = async (): Promise<number> => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
      };
      expect(await context.guard('request rate', down, 7)).to.equal(7);
      expect(await context.guard('budget', down, 8)).to.equal(8);
      expect(lines).to.have.length(1);
      expect(lines[0]).to.include({
        what: 'request rate',
        policy: 'open',
        msg: 'limit store unavailable: failing open',
      });
    });

    it('on_error closed: an unreachable store refuses the request with 503 and Retry-After 1', async () => {
      const { context, lines } = limitsContext('closed');
      let refusal: GatewayError | undefined;
      await context
        .guard('request rate', async () => Promise.reject(new Error('timeout')), 0)
        .catch((err: GatewayError) => (refusal = err));
      expect(refusal).to.be.instanceOf(GatewayError);
      expect(refusal).to.include({ code: 'limits_unavailable', status: 503 });
      expect(refusal?.message).to.equal(
        'Limits cannot be checked right now (limit store unavailable); try again shortly.',
      );
      expect(refusal?.headers).to.deep.equal({ 'retry-after': '1' });
      expect(lines[0]).to.include({ policy: 'closed', msg: 'limit store unavailable: failing closed' });
    });

    it('a refusal from the store operation itself passes through under either policy', async () => {
      for (const policy of ['open', 'closed'] as const) {
        const { context, lines } = limitsContext(policy);
        const refusal = new GatewayError('rate_limited', 'over the limit');
        let thrown: unknown;
        await context.guard('request rate', async () => Promise.reject(refusal), 0).catch((err) => (thrown = err));
        expect(thrown).to.equal(refusal);
        expect(lines).to.deep.equal([]);
      }
    });
  });
});
