import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ANTHROPIC_KEY, OPENAI_KEY, startTestGateway, type TestGateway } from '../helpers/gateway';
import { fixtureBytes } from '../helpers/fixtures';
import { TestUpstream } from '../helpers/upstream';
import { completed, STOLEN, type Observation } from './fixtures/probe-plugin';
import { BUSY_MS } from './fixtures/slow-observer-plugin';
import { INTERNAL_MESSAGE } from './fixtures/throwing-plugin';
import { bootError, bootGateway, call, chat, eventually, FIXTURES_DIR, pipelineYaml, waitForRecord } from './helpers';

const probe = join(FIXTURES_DIR, 'probe-plugin');
const throwing = join(FIXTURES_DIR, 'throwing-plugin');
const slowObserver = join(FIXTURES_DIR, 'slow-observer-plugin');
const seen = (r: { headers: Record<string, unknown> }): Observation => JSON.parse(String(r.headers['x-probe']));

/**
 * The plugin contract, proven through a real gateway with third-party plugins loaded from YAML by path:
 * what a plugin can see and do in each phase, what it can never touch (provider keys), and that its
 * failures are contained.
 */
describe('framework: the plugin contract', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    // A provider whose key travels in a header of its own: plugins must not read that one either.
    const keyed = `providers:\n  keyed: { type: openai-compatible, base_url: "${upstream.url}/keyed/v1", prefixes: [keyed-], auth: { header: x-keyed-api-key } }\n`;
    gw = await startTestGateway(
      upstream.url,
      pipelineYaml([`- use: "${probe}"\n  options: { tag: probed }`, `- use: "${throwing}"`]) + keyed,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });
  beforeEach(() => upstream.reset());

  it('reads the request context: workspace, key id, provider, model and tags', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), {
      'x-gateway-metadata': '{"agent":"bot","feature":"triage"}',
    });
    expect(r.status).to.equal(200);
    const s = seen(r);
    expect(s).to.include({ workspace: 'default', keyId: 'test', provider: 'openai', model: 'gpt-4o-mini' });
    expect(s.tags).to.deep.equal({ agent: 'bot', feature: 'triage' });
  });

  it('adds a tag that is stored with the request', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), { 'x-gateway-metadata-agent': 'tagger' });
    const record = await waitForRecord(gw, r.headers['x-gateway-request-id']);
    expect(record.tags).to.deep.equal({ agent: 'tagger', probed: 'yes' });
  });

  describe('provider keys are out of reach', () => {
    it('cannot read or replace Authorization (OpenAI) in beforeUpstream', async () => {
      const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'));
      expect(r.status).to.equal(200);
      for (const [door, value] of Object.entries(seen(r).read)) expect(value, door).to.equal(null);
      const sent = upstream.last().headers;
      expect(sent.authorization).to.equal(`Bearer ${OPENAI_KEY}`);
      expect(JSON.stringify(sent)).to.not.include(gw.key); // the gateway key never leaves the gateway
    });

    it('cannot read or replace x-api-key (Anthropic), nor add the other header Anthropic accepts', async () => {
      const r = await call(
        gw,
        '/v1/messages',
        { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
        {
          authorization: undefined,
          'x-api-key': ANTHROPIC_KEY,
          'anthropic-version': '2023-06-01',
        },
      );
      expect(r.status).to.equal(200);
      for (const [door, value] of Object.entries(seen(r).read)) expect(value, door).to.equal(null);
      const sent = upstream.last().headers;
      expect(sent['x-api-key']).to.equal(ANTHROPIC_KEY);
      // Anthropic also takes Authorization: a plugin must not slip in a key of its own that way either.
      expect(sent.authorization).to.equal(undefined);
    });

    it("cannot read a YAML provider's own key header (x-keyed-api-key)", async () => {
      const r = await call(gw, '/v1/chat/completions', chat('keyed-model'), {
        authorization: undefined,
        'x-keyed-api-key': 'keyed-PLANTED-SECRET',
      });
      expect(r.status).to.equal(200);
      for (const [door, value] of Object.entries(seen(r).read)) expect(value, door).to.equal(null);
      expect(upstream.last().headers['x-keyed-api-key']).to.equal('keyed-PLANTED-SECRET');
    });

    it('cannot read the provider key after it was added to the upstream call (onResponse, onComplete)', async () => {
      for (const [path, body, headers] of [
        ['/v1/chat/completions', chat('gpt-4o-mini'), {}],
        ['/v1/chat/completions', chat('gpt-4o-mini', { stream: true }), {}],
        [
          '/v1/messages',
          { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
          { authorization: undefined, 'x-api-key': ANTHROPIC_KEY },
        ],
        [
          '/v1/chat/completions',
          chat('keyed-model'),
          { authorization: undefined, 'x-keyed-api-key': 'keyed-PLANTED-SECRET' },
        ],
      ] as const) {
        const before = completed.length;
        const r = await call(gw, path, body, headers);
        expect(r.status, path).to.equal(200);
        const done = await eventually(() =>
          completed.slice(before).find((c) => c.requestId === r.headers['x-gateway-request-id']),
        );
        expect(Object.keys(done.laterReads)).to.have.length(20);
        for (const [door, value] of Object.entries(done.laterReads)) {
          // Only what the probe itself wrote into upstreamHeaders in beforeUpstream may come back.
          if (door.includes(' upstream:') && value !== null)
            expect(String(value), `${path} ${door}`).to.include(STOLEN);
          else expect(value, `${path} ${door}`).to.equal(null);
        }
        for (const secret of [OPENAI_KEY, ANTHROPIC_KEY, 'keyed-PLANTED-SECRET', gw.key])
          expect(JSON.stringify(done.laterReads)).to.not.include(secret);
      }
    });

    it('what a plugin writes into other headers is forwarded, but never the provider key it tried to set', async () => {
      await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'));
      const sent = upstream.last().headers;
      expect(sent.authorization).to.not.include(STOLEN);
      // x-api-key carries Anthropic's key: no provider gets a credential header but its own, whoever wrote it.
      expect(sent['x-api-key']).to.equal(undefined);
      // x-acme-key is no deployed provider's credential header here: a plain header, forwarded.
      expect(sent['x-acme-key']).to.equal(STOLEN);
    });
  });

  it('observes every event of a stream while the client gets the upstream bytes unchanged', async () => {
    const before = completed.length;
    const r = await call(
      gw,
      '/v1/chat/completions',
      chat('gpt-4o-mini', { stream: true, stream_options: { include_usage: true } }),
    );
    expect(r.status).to.equal(200);
    expect(r.text).to.equal(fixtureBytes('openai/chat_stream_with_usage.sse').toString('utf8'));
    const done = await eventually(() =>
      completed.slice(before).find((c) => c.requestId === r.headers['x-gateway-request-id']),
    );
    const events = r.text.split('\n\n').filter((e) => e.includes('data:')).length;
    expect(done.events).to.equal(events);
    expect(done.usage).to.include({ inputTokens: 12, outputTokens: 12 });
  });

  it('does not complete a request refused before the probe was reached', async () => {
    const before = completed.length;
    const refused = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), { 'x-gateway-key': undefined });
    expect(refused.json.error.code).to.equal('gateway_key_missing');
    const answered = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'));
    await eventually(() =>
      completed.slice(before).find((c) => c.requestId === answered.headers['x-gateway-request-id']),
    );
    const ids = completed.slice(before).map((c) => c.requestId);
    expect(ids).to.not.include(refused.headers['x-gateway-request-id']);
  });

  it('acts on completion with the final status, usage and tags', async () => {
    const before = completed.length;
    const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), { 'x-gateway-metadata-customer-id': 'acme' });
    const done = await eventually(() =>
      completed.slice(before).find((c) => c.requestId === r.headers['x-gateway-request-id']),
    );
    expect(done.status).to.equal(200);
    expect(done.tags).to.deep.equal({ customer_id: 'acme', probed: 'yes' });
    expect(done.usage?.cacheReadTokens).to.equal(1024);
  });

  describe('a failing plugin is contained', () => {
    for (const phase of ['onRequest', 'beforeUpstream', 'onResponse']) {
      it(`an exception in ${phase} answers 500 plugin_error without its message, and the gateway keeps serving`, async () => {
        const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), { 'x-gateway-metadata-explode': phase });
        expect(r.status).to.equal(500);
        expect(r.json.error.code).to.equal('plugin_error');
        expect(r.text).to.not.include('kaboom');
        expect(upstream.received.length).to.equal(phase === 'onResponse' ? 1 : 0);
        expect(gw.logs.some((l) => l.includes(INTERNAL_MESSAGE) && l.includes('"plugin":"throwing"'))).to.equal(true);

        const next = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'));
        expect(next.status).to.equal(200);
      });
    }

    it('an exception in onStreamEvent leaves the stream untouched', async () => {
      const r = await call(
        gw,
        '/v1/chat/completions',
        chat('gpt-4o-mini', { stream: true, stream_options: { include_usage: true } }),
        { 'x-gateway-metadata-explode': 'onStreamEvent' },
      );
      expect(r.status).to.equal(200);
      expect(r.text).to.equal(fixtureBytes('openai/chat_stream_with_usage.sse').toString('utf8'));
    });

    it('an exception in onComplete is logged; the answer and the record are unaffected', async () => {
      const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), {
        'x-gateway-metadata-explode': 'onComplete',
      });
      expect(r.status).to.equal(200);
      await eventually(() =>
        gw.logs.some((l) => l.includes('"phase":"onComplete"') && l.includes(INTERNAL_MESSAGE)) ? true : undefined,
      );
      expect((await waitForRecord(gw, r.headers['x-gateway-request-id'])).status).to.equal(200);
    });
  });
});

describe('framework: a stream observer cannot hold a chunk back', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    gw = await startTestGateway(upstream.url, pipelineYaml([`- use: "${slowObserver}"`]));
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('each chunk is handed to the client before plugins observe it', async () => {
    // The provider sends one event, then the next 2 x BUSY_MS later. The observer blocks the gateway's event loop
    // for BUSY_MS on the first event. Had it run before the write, the client (another process, so it keeps
    // reading while the gateway is blocked) would get the first chunk BUSY_MS late, and the gap to the second
    // would shrink to about BUSY_MS.
    const gapMs = 2 * BUSY_MS;
    upstream.respondWith(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: [Buffer.from('data: {"choices":[{"delta":{"content":"a"}}]}\n\n'), Buffer.from('data: [DONE]\n\n')],
      delayMs: gapMs,
    }));
    const client = `
      const t0 = performance.now(); const times = [];
      const req = require('node:http').request(process.argv[1], { method: 'POST', headers: JSON.parse(process.argv[2]) }, (res) => {
        res.on('data', () => times.push(performance.now() - t0));
        res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, times })));
      });
      req.end(process.argv[3]);`;
    const headers = {
      'content-type': 'application/json',
      'x-gateway-key': gw.key,
      authorization: `Bearer ${OPENAI_KEY}`,
    };
    // Asynchronously: the gateway runs in this process and must keep serving while the client waits.
    const { stdout: out } = await promisify(execFile)(
      process.execPath,
      [
        '-e',
        client,
        `${gw.url}/v1/chat/completions`,
        JSON.stringify(headers),
        JSON.stringify(chat('gpt-4o-mini', { stream: true })),
      ],
      { encoding: 'utf8', timeout: 20_000 },
    );
    const { status, times } = JSON.parse(out) as { status: number; times: number[] };
    expect(status).to.equal(200);
    expect(times.length).to.be.at.least(2);
    // Fixed: the gap stays near 2 x BUSY_MS. Broken: near BUSY_MS. The threshold sits halfway.
    expect(times[times.length - 1] - times[0]).to.be.above(1.5 * BUSY_MS);
  });
});

describe('framework: built-in positions in the pipeline', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    // Only the probe and the recorder are listed: auth and header-strip are put first, so the probe still sees
    // an authenticated request whose X-Gateway-* headers are already gone. attribution is not listed: no tags.
    gw = await startTestGateway(upstream.url, `plugins:\n  - use: "${probe}"\n  - use: usage-recorder\n`);
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('auth and header-strip run first when the YAML does not list them', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'), { 'x-gateway-metadata-agent': 'bot' });
    expect(r.status).to.equal(200);
    const s = seen(r);
    expect(s.workspace).to.equal('default');
    expect(s.upstreamHeaderNames.filter((h) => h.startsWith('x-gateway-'))).to.deep.equal([]);
    expect(s.tags).to.deep.equal({});
  });

  it('refuses to start with auth or header-strip disabled', async () => {
    expect(await bootError('plugins:\n  - { use: header-strip, enabled: false }\n')).to.equal(
      'plugins: "header-strip" cannot be disabled',
    );
  });
});

describe('framework: a plugin listed before auth and header-strip', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    gw = await startTestGateway(
      upstream.url,
      `plugins:\n  - use: "${probe}"\n  - use: auth\n  - use: header-strip\n  - use: usage-recorder\n`,
    );
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('runs first in beforeUpstream, yet sees neither the gateway key nor the provider key', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'));
    expect(r.status).to.equal(200);
    const s = seen(r);
    for (const [door, value] of Object.entries(s.read)) expect(value, door).to.equal(null);
    expect(s.upstreamHeaderNames).to.not.include('x-gateway-key');
    // header-strip ran after the probe and removed the X-Gateway-Key the probe tried to add.
    expect(upstream.last().headers['x-gateway-key']).to.equal(undefined);
    expect(upstream.last().headers.authorization).to.equal(`Bearer ${OPENAI_KEY}`);
  });
});

describe('framework: plugin loading errors stop start-up with a message naming the plugin', () => {
  it("options that fail the plugin's schema: the entry, the plugin, the key and the problem", async () => {
    const message = await bootError(
      `plugins:\n  - use: auth\n  - use: "${probe}"\n    options: { tag: 7, colour: red }\n`,
    );
    expect(message).to.match(/^plugins\[1\] \(probe\): /);
    expect(message).to.include('options.tag: Invalid input: expected string, received number');
    expect(message).to.include('"colour"');
  });

  it('the index is the YAML one even when built-ins are added implicitly', async () => {
    const message = await bootError(`plugins:\n  - use: "${probe}"\n    options: { tag: [] }\n`);
    expect(message).to.match(/^plugins\[0\] \(probe\): options\.tag: /);
  });

  it('a plugin that needs another plugin API version', async () => {
    const message = await bootError(`plugins:\n  - use: "${join(FIXTURES_DIR, 'future-api-plugin')}"\n`);
    expect(message).to.equal(
      'plugins[0] (from-the-future): it needs plugin API version "99", but this Tollgate provides version "2"',
    );
  });

  it('a path that does not exist, relative to the config file', async () => {
    const message = await bootError('plugins:\n  - use: ./no/such/plugin\n', FIXTURES_DIR);
    expect(message).to.match(/^plugins\[0\]: cannot load "\.\/no\/such\/plugin": Cannot find module/);
    expect(message).to.include(`(paths are relative to ${FIXTURES_DIR})`);
  });

  it('loads an npm package installed next to the config file (plain CommonJS, module.exports)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-pkg-'));
    const pkg = join(dir, 'node_modules/tollgate-plugin-hello');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'tollgate-plugin-hello', main: 'lib/main.js' }));
    mkdirSync(join(pkg, 'lib'));
    writeFileSync(
      join(pkg, 'lib/main.js'),
      "module.exports = { name: 'hello', create: (_c, o) => { globalThis.helloOptions = o; return { name: 'hello' }; } };\n",
    );
    const gateway = await bootGateway('plugins:\n  - use: tollgate-plugin-hello\n    options: { greeting: hi }\n', dir);
    await gateway.close(0);
    expect((globalThis as any).helloOptions).to.deep.equal({ greeting: 'hi' });
  });

  it('loads an ESM-only npm package installed next to the config file (exports with an import entry only)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-esm-pkg-'));
    const pkg = join(dir, 'node_modules/tollgate-plugin-esm-only');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name: 'tollgate-plugin-esm-only', type: 'module', exports: { '.': { import: './index.js' } } }),
    );
    writeFileSync(
      join(pkg, 'index.js'),
      "export default { name: 'esm-only', create: (_c, o) => { globalThis.esmOnlyOptions = o; return { name: 'esm-only' }; } };\n",
    );
    const gateway = await bootGateway(
      'plugins:\n  - use: tollgate-plugin-esm-only\n    options: { colour: green }\n',
      dir,
    );
    await gateway.close(0);
    expect((globalThis as any).esmOnlyOptions).to.deep.equal({ colour: 'green' });
  });

  it('an npm package that is not installed', async () => {
    const message = await bootError('plugins:\n  - use: tollgate-plugin-that-does-not-exist\n');
    expect(message).to.match(/^plugins\[0\]: cannot load "tollgate-plugin-that-does-not-exist": /);
  });

  it('a module that exports no plugin definition', async () => {
    const message = await bootError('plugins:\n  - use: ./not-a-plugin\n', FIXTURES_DIR);
    expect(message).to.equal(
      'plugins[0]: "./not-a-plugin" does not export a plugin definition (export default definePlugin({ name, create }))',
    );
  });
});

describe('framework: plugin modules', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  before(async () => {
    await upstream.start();
    gw = await startTestGateway(upstream.url, pipelineYaml([`- use: "${join(FIXTURES_DIR, 'esm-plugin.mjs')}"`]));
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('an ES module plugin loads like a CommonJS one', async () => {
    const r = await call(gw, '/v1/chat/completions', chat('gpt-4o-mini'));
    expect(r.headers['x-esm-plugin']).to.equal('loaded');
  });
});
