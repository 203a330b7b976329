import { expect } from 'chai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createPluginHarness, createTestContext } from 'tollgate/testing';
import modelPolicy from '../../examples/plugins/model-policy';
import { type TestGateway, useGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';
import { BOOT_KEY, bootError, bootGateway, call, chat, EXAMPLES_DIR, pipelineYaml, waitForRecord } from './helpers';

const TEAM_A_KEY = 'tg_team_a_key_for_the_model_policy_test_000001';
const POLICY = `
default: { deny: ["o1*", "gpt-4.5*"] }
workspaces:
  team-a: { allow: ["gpt-4o-mini", "claude-*"] }
`;

/** The example plugin on its own, through the public test helpers ('tollgate/testing'), as its author would test it. */
describe('examples/plugins/model-policy with tollgate/testing', () => {
  const options = { default: { deny: ['o1*'] }, workspaces: { 'team-a': { allow: ['gpt-4o-mini', 'claude-*'] } } };

  it('admits an allowed model and refuses a denied one with policy_denied', async () => {
    const harness = await createPluginHarness(modelPolicy, { options });
    expect(await harness.exchange(createTestContext({ json: chat('gpt-4o') }))).to.equal(undefined);

    const ctx = createTestContext({ json: chat('o1-preview') });
    const refusal = await harness.exchange(ctx);
    expect(refusal?.code).to.equal('policy_denied');
    expect(refusal?.status).to.equal(403);
    expect(refusal?.message).to.equal(
      'Model "o1-preview" is not allowed for workspace "default": it matches the deny pattern "o1*".',
    );
    expect(ctx.status).to.equal(403);
  });

  it('a workspace rule replaces the default: only its allow list counts', async () => {
    const harness = await createPluginHarness(modelPolicy, { options });
    const run = (model: string) =>
      harness.run('beforeUpstream', createTestContext({ workspace: 'team-a', json: chat(model) }));
    await run('claude-sonnet-4-5');
    await run('gpt-4o-mini');
    let refused: any;
    await run('gpt-4o').catch((e) => (refused = e));
    expect(refused?.message).to.include('not in the allow list (gpt-4o-mini, claude-*)');
  });

  it('lets requests without a model through (GET /v1/models)', async () => {
    const harness = await createPluginHarness(modelPolicy, { options: { default: { allow: ['nothing'] } } });
    expect(await harness.exchange(createTestContext({ endpoint: 'models' }))).to.equal(undefined);
  });

  it('validates its options as start-up does, naming the plugin, the key and the problem', async () => {
    let message = '';
    await createPluginHarness(modelPolicy, {
      options: { workspaces: { 'team-a': { allow: ['claude-*-sonnet'] } } },
    }).catch((e) => (message = e.message));
    expect(message).to.equal(
      'plugins[0] (model-policy): options.workspaces.team-a.allow.0: expected a model name, or a prefix ending in "*" (e.g. "claude-*")',
    );
  });
});

/** Loaded from YAML and proxied through, with two workspaces. */
describe('examples/plugins/model-policy behind the gateway', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  useGateway(
    upstream,
    (started) => (gw = started),
    `
workspaces:
  - { id: default, keys: [{ id: test, key: "\${GATEWAY_KEY}" }] }
  - { id: team-a, keys: [{ id: a, key: "${TEAM_A_KEY}" }] }
${pipelineYaml([`- use: "${join(EXAMPLES_DIR, 'plugins/model-policy')}"\n  options:${POLICY.replace(/^/gm, '    ')}`])}`,
  );

  it('forwards an allowed model', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'));
    expect(r.status).to.equal(200);
    expect(upstream.received).to.have.length(1);
  });

  it('refuses a denied model before anything reaches the provider, and records the refusal', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('o1-preview'));
    expect(r.status).to.equal(403);
    expect(r.json).to.deep.equal({
      error: {
        message: 'Model "o1-preview" is not allowed for workspace "default": it matches the deny pattern "o1*".',
        type: 'permission_error',
        param: 'model',
        code: 'policy_denied',
      },
    });
    expect(upstream.received).to.have.length(0);
    const record = await waitForRecord(gw, r.headers['x-gateway-request-id']);
    expect(record).to.include({ status: 403, error_code: 'policy_denied', model: 'o1-preview' });
  });

  it("applies the workspace's own rule to its keys", async () => {
    const teamA = { 'x-gateway-key': TEAM_A_KEY };
    expect((await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), teamA)).status).to.equal(200);
    expect((await call(gw, '/v1/chat/completions', chat('gpt-4o'), teamA)).json.error.code).to.equal('policy_denied');
    // The default's deny list does not apply to team-a, but its allow list does not name o1 either.
    expect((await call(gw, '/v1/chat/completions', chat('o1-preview'), teamA)).status).to.equal(403);
    // ... while the default workspace may use gpt-4o.
    expect((await call(gw, '/v1/chat/completions', chat('gpt-4o'))).status).to.equal(200);
  });

  it('bad options stop start-up with a message naming the plugin, the key and the problem', async () => {
    const message = await bootError(
      pipelineYaml([
        `- use: ./dist/examples/plugins/model-policy\n  options: { workspaces: { team-a: { alow: ["gpt-4o"] } } }`,
      ]),
    );
    expect(message).to.equal('plugins[3] (model-policy): options.workspaces.team-a: Unrecognized key: "alow"');
  });
});

describe('examples/plugins/model-policy by a path relative to the config file', () => {
  it('loads `use: ./dist/examples/plugins/model-policy` from a config in the project root', async () => {
    const gateway = await bootGateway(
      pipelineYaml(['- use: ./dist/examples/plugins/model-policy\n  options: { default: { deny: ["gpt-*"] } }']),
    );
    const server = createServer(gateway.koa.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const r = await call({ url, key: BOOT_KEY } as TestGateway, '/v1/chat/completions', chat('gpt-4o-mini'));
      expect(r.json.error.code).to.equal('policy_denied');
    } finally {
      server.close();
      await gateway.close(0);
    }
  });
});
