import { expect } from 'chai';
import * as tollgate from 'tollgate';
import { captureLogs, createPluginHarness, createTestContext } from 'tollgate/testing';
import { GatewayError as CoreGatewayError } from '../../core/errors';
import acme from '../../examples/providers/acme';

/** The package entry points, loaded by their public names as a plugin package would load them. */
describe('framework: the public API (tollgate, tollgate/testing)', () => {
  it('exports the two contracts and their helpers, and nothing else at run time', () => {
    expect(Object.keys(tollgate).sort()).to.deep.equal([
      'BoundedCache',
      'ERROR_CODES',
      'FailedKeyTracker',
      'GatewayError',
      'MAX_MODEL_LENGTH',
      'MEDIA_UNIT_FIELDS',
      'OUTPUT_TOKEN_FIELDS',
      'PLUGIN_API_VERSION',
      'PROVIDER_REPORTED',
      'RESERVED_TAG_KEYS',
      'TOKENS',
      'TRUNCATION_MARKER',
      'UNTAGGED',
      'addressKey',
      'anthropicUsageParser',
      'apiKeyHeader',
      'bearer',
      'budgetReadsOf',
      'codePointCompare',
      'countCodePoints',
      'definePlugin',
      'defineProvider',
      'formatUsd',
      'fromText',
      'noAuth',
      'openaiUsageParser',
      'openrouterUsageParser',
      'outputLimitField',
      'parseUsd',
      'perplexityUsageParser',
      'registerService',
      'requestedImages',
      'requestedOutputTokens',
      'resolveService',
      'streamIncomplete',
      'tagSpendPage',
      'tiktokenTokenizer',
      'tokenCount',
      'truncate',
      'typicalSeconds',
      'withJsonField',
      'z',
    ]);
    expect(tollgate.PLUGIN_API_VERSION).to.equal('2');
  });

  it('exports the test helpers from tollgate/testing', () => {
    expect(Object.keys(require('tollgate/testing')).sort()).to.deep.equal([
      'captureLogs',
      'createPluginHarness',
      'createTestContext',
    ]);
  });

  it('keeps the internals out of reach of a package import', () => {
    expect(() => require('tollgate/dist/core/proxy')).to.throw(
      /ERR_PACKAGE_PATH_NOT_EXPORTED|not defined by "exports"/,
    );
  });

  it('hands plugins the very GatewayError class the pipeline recognises', () => {
    expect(tollgate.GatewayError).to.equal(CoreGatewayError);
  });
});

describe('framework: tollgate/testing', () => {
  it('builds a context as the plugins see it: routed, authenticated, credentials hidden', () => {
    const ctx = createTestContext({
      json: { model: 'claude-sonnet-4-5', stream: true, messages: [] },
      endpoint: 'messages',
      headers: { 'X-Api-Key': 'sk-ant-hidden', 'X-Gateway-Key': 'tg_hidden', 'Anthropic-Version': '2023-06-01' },
    });
    expect(ctx).to.include({ model: 'claude-sonnet-4-5', stream: true, keyId: 'test', path: '/v1/messages' });
    expect(ctx.workspace?.id).to.equal('default');
    expect(ctx.provider?.slug).to.equal('anthropic');
    expect(ctx.header('x-api-key')).to.equal(undefined);
    expect(ctx.header('anthropic-version')).to.equal('2023-06-01');
    expect(ctx.upstreamHeaders).to.deep.equal({ 'anthropic-version': '2023-06-01' });
  });

  it('leaves workspace and key unset for a request auth has not seen yet', () => {
    const ctx = createTestContext({ workspace: null, keyId: null });
    expect(ctx.workspace).to.equal(undefined);
    expect(ctx.keyId).to.equal(undefined);
  });

  it("applies the gateway's error policy to a plugin's hooks", async () => {
    const { logger, lines } = captureLogs();
    const plugin = tollgate.definePlugin({
      name: 'moody',
      create: () => ({
        name: 'moody',
        onRequest(ctx) {
          if (ctx.tags.mood === 'refuse') throw new tollgate.GatewayError('required_tag_missing', 'no');
          if (ctx.tags.mood === 'crash') throw new TypeError('oops');
        },
        onStreamEvent() {
          throw new Error('never reaches the client');
        },
      }),
    });
    const harness = await createPluginHarness(plugin);
    expect((await harness.exchange(createTestContext({ tags: { mood: 'refuse' } })))?.code).to.equal(
      'required_tag_missing',
    );
    expect((await harness.exchange(createTestContext({ tags: { mood: 'crash' }, log: logger })))?.code).to.equal(
      'plugin_error',
    );
    expect(lines.some((l) => l.plugin === 'moody' && l.phase === 'onRequest')).to.equal(true);
    expect(() => harness.streamEvent(createTestContext(), 'data')).to.not.throw();
  });

  it('names the plugin when create() fails, as start-up does', async () => {
    const plugin = tollgate.definePlugin({
      name: 'needs-a-database',
      create: () => {
        throw new Error('cannot reach the database');
      },
    });
    let message = '';
    await createPluginHarness(plugin).catch((e) => (message = e.message));
    expect(message).to.equal('plugins[0] (needs-a-database): create() failed: cannot reach the database');
  });

  it('gives create() the shared services, replaceable by name', async () => {
    let seen: unknown;
    const plugin = tollgate.definePlugin({
      name: 'needs-config-dir',
      create: (container) => {
        seen = container.resolve(tollgate.TOKENS.ConfigDir);
        return { name: 'needs-config-dir' };
      },
    });
    await createPluginHarness(plugin, { services: { ConfigDir: '/etc/tollgate' } });
    expect(seen).to.equal('/etc/tollgate');
  });

  describe('prices a custom provider as start-up does', () => {
    /** Puts the shared cost service's answer (pico-USD, or "null" when unknown) in an x-cost header. */
    const costHeader = tollgate.definePlugin({
      name: 'cost-header',
      create: (container) => {
        const cost = tollgate.resolveService(container, tollgate.TOKENS.RequestCost);
        return {
          name: 'cost-header',
          onResponse: (ctx) => void (ctx.responseHeaders['x-cost'] = String(cost.of(ctx).costPico)),
        };
      },
    });
    const costWith = async (opts: Parameters<typeof createPluginHarness>[1]): Promise<string> => {
      const harness = await createPluginHarness(costHeader, opts);
      const ctx = createTestContext({
        provider: 'acme',
        json: { model: 'acme-large', messages: [] },
        usage: { inputTokens: 20, cacheReadTokens: 100, outputTokens: 30 },
      });
      expect(await harness.exchange(ctx)).to.equal(undefined);
      return ctx.responseHeaders['x-cost'];
    };
    const deployment = {
      pricing: { models: [{ provider: 'acme', model: 'acme-large', input: '1', output: '3', cache_read: '0.25' }] },
    };

    it("from the config's pricing block: 20 x $1 + 100 x $0.25 + 30 x $3 per 1M = 135,000,000 pico-USD", async () => {
      expect(await costWith({ config: deployment })).to.equal('135000000');
    });

    it("from the provider module's own prices: 20 x $2 + 100 x $0.5 + 30 x $6 per 1M = 270,000,000 pico-USD", async () => {
      expect(await costWith({ providers: { acme } })).to.equal('270000000');
    });

    it("the config's prices win over the module's, and without either the cost is unknown", async () => {
      expect(await costWith({ config: deployment, providers: { acme } })).to.equal('135000000');
      expect(await costWith({})).to.equal('null');
    });

    it('refuses a config that is not valid, naming the setting', async () => {
      let message = '';
      await createPluginHarness(costHeader, {
        config: { pricing: { models: [{ provider: 'acme', model: 'acme-large', input: 'two' }] } },
      }).catch((e) => (message = e.message));
      expect(message).to.include('pricing.models[0].input');
    });
  });
});
