import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { fixtureBytes, fixtureJson, PROJECT_ROOT } from '../helpers/fixtures';
import { ANTHROPIC_KEY, OPENAI_KEY, startTestGateway, type TestGateway, chatThrough } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

/** A span as the OTLP/HTTP JSON encoding carries it, with its attributes flattened. */
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status: { code?: number; message?: string };
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, string | number | boolean | string[]>;
  resource: Record<string, string | number | boolean | string[]>;
}

type OtlpValue = {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
};
type OtlpAttribute = { key: string; value: OtlpValue };
const plain = (value: OtlpValue): any =>
  value.arrayValue
    ? (value.arrayValue.values ?? []).map(plain)
    : (value.stringValue ??
      (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.doubleValue ??
      value.boolValue!);
const flatten = (list: OtlpAttribute[] = []) => Object.fromEntries(list.map(({ key, value }) => [key, plain(value)]));

/** An OTLP/HTTP receiver on the loopback: keeps every span of every JSON export it is sent. */
class OtlpReceiver {
  readonly spans: ExportedSpan[] = [];
  readonly contentTypes: string[] = [];
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.contentTypes.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const rs of body.resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) {
            for (const span of ss.spans ?? [])
              this.spans.push({
                ...span,
                attributes: flatten(span.attributes),
                resource: flatten(rs.resource?.attributes),
              });
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;

/** The usage of a recorded Anthropic stream: input from message_start, output from the last message_delta. */
function streamedUsage(file: string) {
  const events = fixtureBytes(file)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.startsWith('data: '))
    .map((l) => JSON.parse(l.slice(6)));
  const start = events.find((e) => e.type === 'message_start').message;
  const deltas = events.filter((e) => e.type === 'message_delta');
  return {
    input: start.usage.input_tokens + start.usage.cache_read_input_tokens + start.usage.cache_creation_input_tokens,
    output: deltas.at(-1).usage.output_tokens,
    cacheRead: start.usage.cache_read_input_tokens,
    cacheCreation: start.usage.cache_creation_input_tokens,
    model: start.model,
    id: start.id,
    stopReason: deltas.at(-1).delta.stop_reason,
  };
}

/** A chat request with the gateway key (unless `headers` replace it); resolves with the status once the answer is read. */
async function chat(gw: TestGateway, headers: Record<string, string>): Promise<number> {
  const res = await chatThrough(gw, { ...headers }, { messages: [] });
  await res.body.text();
  return res.statusCode;
}

describe('OpenTelemetry tracing (opt-in through OTEL_* variables)', () => {
  const upstream = new TestUpstream();
  const receiver = new OtlpReceiver();
  let otlpUrl: string;
  before(async () => {
    await upstream.start();
    otlpUrl = await receiver.start();
  });
  after(async () => {
    await upstream.stop();
    await receiver.stop();
  });
  beforeEach(() => {
    upstream.reset();
    receiver.spans.length = 0;
  });

  /** A gateway exporting to the receiver; its stop() flushes the spans still batched. */
  const traced = (extraEnv: NodeJS.ProcessEnv = {}) =>
    startTestGateway(upstream.url, 'metrics: { enabled: false }', {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl,
      ...extraEnv,
    });

  /**
   * A traced gateway with a sampler: the SDK reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG from process.env
   * while the gateway starts (not from the variables the gateway is given), so they are set there for that moment.
   */
  const sampledBy = async (sampler: { OTEL_TRACES_SAMPLER: string; OTEL_TRACES_SAMPLER_ARG: string }) => {
    const saved = Object.keys(sampler).map((key) => [key, process.env[key]] as const);
    Object.assign(process.env, sampler);
    try {
      return await traced();
    } finally {
      for (const [key, value] of saved) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  };

  it("one span per request with the GenAI attributes, the cost and the tags, continuing the client's trace to the provider", async () => {
    const gw = await traced({ OTEL_SERVICE_NAME: 'gateway-under-test' });
    let cost: string | null | undefined;
    let requestId: string | null | undefined;
    try {
      const client = new OpenAI({
        apiKey: OPENAI_KEY,
        baseURL: `${gw.url}/v1`,
        maxRetries: 0,
        defaultHeaders: {
          'X-Gateway-Key': gw.key,
          traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`,
          tracestate: 'vendor=abc',
          'X-Gateway-Metadata-Feature': 'search',
        },
      });
      const { response } = await client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 500 })
        .withResponse();
      cost = response.headers.get('x-gateway-cost');
      requestId = response.headers.get('x-gateway-request-id');
    } finally {
      await gw.stop();
    }
    expect(receiver.contentTypes).to.deep.equal(['POST /v1/traces application/json']);
    expect(receiver.spans).to.have.length(1);
    const [span] = receiver.spans;
    const usage = fixtureJson('openai/chat_completion_cached_tokens.json');

    // The trace continues: the client's trace id, its span as the parent; the provider's parent is the gateway span.
    expect(span.traceId).to.equal(TRACE_ID);
    expect(span.parentSpanId).to.equal(CLIENT_SPAN);
    const sent = upstream.last().headers;
    expect(sent.traceparent).to.equal(`00-${TRACE_ID}-${span.spanId}-01`);
    expect(sent.tracestate).to.equal('vendor=abc');

    expect(span.name).to.equal('chat gpt-4o-mini');
    expect(span.kind).to.equal(3); // CLIENT, as the GenAI conventions give inference spans
    expect(span.resource['service.name']).to.equal('gateway-under-test');
    expect(span.attributes).to.include({
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.response.model': usage.model,
      'gen_ai.usage.input_tokens': usage.usage.prompt_tokens,
      'gen_ai.usage.output_tokens': usage.usage.completion_tokens,
      'gen_ai.usage.cache_read.input_tokens': usage.usage.prompt_tokens_details.cached_tokens,
      'gen_ai.request.max_tokens': 500,
      'gen_ai.response.id': usage.id,
      'http.response.status_code': 200,
      'tollgate.workspace': 'default',
      'tollgate.tag.feature': 'search',
      'tollgate.request_id': requestId,
      'tollgate.cost.provenance': 'measured',
    });
    expect(span.attributes['gen_ai.response.finish_reasons']).to.deep.equal(
      usage.choices.map((c: any) => c.finish_reason),
    );
    expect(span.attributes['tollgate.cost_usd']).to.equal(Number(cost));
    expect(span.status.code ?? 0).to.equal(0);
    const durationMs = Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1e6;
    expect(durationMs).to.be.greaterThan(0).and.below(10_000);
  });

  it('a streamed request without a client trace starts a trace; the provider gets the gateway span as its parent', async () => {
    const gw = await traced();
    try {
      const client = new Anthropic({
        apiKey: ANTHROPIC_KEY,
        baseURL: gw.url,
        maxRetries: 0,
        defaultHeaders: { 'X-Gateway-Key': gw.key },
      });
      const stream = await client.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
      });
      for await (const _event of stream);
    } finally {
      await gw.stop();
    }
    expect(receiver.spans).to.have.length(1);
    const [span] = receiver.spans;
    expect(span.parentSpanId ?? '').to.equal('');
    const [, traceId, parentId, flags] = TRACEPARENT.exec(String(upstream.last().headers.traceparent))!;
    expect([traceId, parentId, flags]).to.deep.equal([span.traceId, span.spanId, '01']);
    const usage = streamedUsage('anthropic/messages_stream.sse');
    expect(span.name).to.equal('chat claude-sonnet-4-5');
    expect(span.attributes).to.include({
      'gen_ai.system': 'anthropic',
      'gen_ai.request.model': 'claude-sonnet-4-5',
      'gen_ai.response.model': usage.model,
      'gen_ai.usage.input_tokens': usage.input,
      'gen_ai.usage.output_tokens': usage.output,
      'gen_ai.usage.cache_read.input_tokens': usage.cacheRead,
      'gen_ai.usage.cache_creation.input_tokens': usage.cacheCreation,
      'gen_ai.request.max_tokens': 100,
      'gen_ai.response.id': usage.id,
      'tollgate.stream': true,
    });
    expect(span.attributes['gen_ai.response.finish_reasons']).to.deep.equal([usage.stopReason]);
  });

  it('a refused request is a span too, marked as an error; a client trace that is not sampled is continued but not exported', async () => {
    const gw = await traced();
    try {
      expect(await chat(gw, { 'x-gateway-key': 'tg_not_a_key' })).to.equal(401);
      expect(await chat(gw, { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-00` })).to.equal(200);
    } finally {
      await gw.stop();
    }
    expect(receiver.spans).to.have.length(1);
    const [span] = receiver.spans;
    expect(span.attributes).to.include({ 'error.type': 'gateway_key_invalid', 'http.response.status_code': 401 });
    expect(span.attributes).to.not.have.property('gen_ai.system');
    expect(span.status.code).to.equal(2); // ERROR
    // Not sampled by the client: the provider still gets the trace, with the gateway's span id and the flag off.
    expect(upstream.received).to.have.length(1);
    const [, traceId, parentId, flags] = TRACEPARENT.exec(String(upstream.last().headers.traceparent))!;
    expect(traceId).to.equal(TRACE_ID);
    expect(parentId).to.not.equal(CLIENT_SPAN);
    expect(flags).to.equal('00');
  });

  it('a request the sampler leaves out exports no span, yet the provider gets a traceparent with the flag off', async () => {
    const gw = await sampledBy({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    let own: Record<string, unknown>;
    let continued: Record<string, unknown>;
    try {
      expect(await chat(gw, {})).to.equal(200);
      own = upstream.last().headers;
      const client = { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`, tracestate: 'vendor=abc' };
      expect(await chat(gw, client)).to.equal(200);
      continued = upstream.last().headers;
    } finally {
      await gw.stop();
    }
    expect(receiver.spans).to.deep.equal([]);
    // Without a client trace: a new one, not sampled.
    const [, newTrace, , ownFlags] = TRACEPARENT.exec(String(own.traceparent))!;
    expect([newTrace === TRACE_ID, ownFlags]).to.deep.equal([false, '00']);
    // traceidratio is not parent-based: the client's sampled trace is continued, with the gateway's span id and
    // the flag off, its tracestate passed on.
    const [, traceId, parentId, flags] = TRACEPARENT.exec(String(continued.traceparent))!;
    expect([traceId, flags]).to.deep.equal([TRACE_ID, '00']);
    expect(parentId).to.not.equal(CLIENT_SPAN);
    expect(continued.tracestate).to.equal('vendor=abc');
  });

  it("a parent-based ratio sampler samples a client's sampled trace whatever the ratio, and only that one", async () => {
    const gw = await sampledBy({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    try {
      expect(await chat(gw, {})).to.equal(200);
      expect(await chat(gw, { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`, tracestate: 'vendor=abc' })).to.equal(
        200,
      );
    } finally {
      await gw.stop();
    }
    expect(receiver.spans).to.have.length(1);
    const [span] = receiver.spans as (ExportedSpan & { traceState?: string })[];
    expect([span.traceId, span.parentSpanId, span.traceState]).to.deep.equal([TRACE_ID, CLIENT_SPAN, 'vendor=abc']);
    expect(upstream.last().headers.traceparent).to.equal(`00-${TRACE_ID}-${span.spanId}-01`);
  });

  it("an invalid traceparent starts a new trace, and the client's tracestate does not travel with it", async () => {
    const gw = await traced();
    try {
      expect(await chat(gw, { traceparent: '00-not-a-trace-01', tracestate: 'vendor=abc' })).to.equal(200);
    } finally {
      await gw.stop();
    }
    const [span] = receiver.spans;
    expect(span.parentSpanId ?? '').to.equal('');
    const sent = upstream.last().headers;
    const [, traceId, parentId] = TRACEPARENT.exec(String(sent.traceparent))!;
    expect([traceId, parentId]).to.deep.equal([span.traceId, span.spanId]);
    expect(sent).to.not.have.property('tracestate');
  });

  it("off without OTEL_* variables: the client's traceparent reaches the provider untouched, and nothing is exported", async () => {
    const gw = await startTestGateway(upstream.url);
    try {
      expect(await chat(gw, { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` })).to.equal(200);
    } finally {
      await gw.stop();
    }
    expect(upstream.last().headers.traceparent).to.equal(`00-${TRACE_ID}-${CLIENT_SPAN}-01`);
    expect(receiver.spans).to.deep.equal([]);
  });

  // prom-client's process CPU metric loads @opentelemetry/api (the no-op API, for exemplars): the SDK is what tracing adds.
  it('off, the OpenTelemetry SDK is never loaded; with metrics off, neither is prom-client (a fresh process)', async function () {
    this.timeout(120_000); // three fresh processes, each loading the gateway: slow on a busy machine
    const loaded = async (yaml: string, env: Record<string, string>) => {
      const script = `
const { parseConfig } = require(${JSON.stringify(resolve(PROJECT_ROOT, 'dist/config/load'))});
const { startGateway } = require(${JSON.stringify(resolve(PROJECT_ROOT, 'dist/runtime/servers'))});
const { createLogger } = require(${JSON.stringify(resolve(PROJECT_ROOT, 'dist/runtime/logger'))});
const { mkdtempSync } = require('node:fs');
(async () => {
  const dir = mkdtempSync(require('node:os').tmpdir() + '/tollgate-lazy-');
  const config = parseConfig(${JSON.stringify(yaml)}.replace('DIR', dir), { GATEWAY_KEY: 'tg_lazy_load_key_000000000000000000000000001' }, 'lazy');
  const gw = await startGateway({ config, path: dir + '/g.yaml', dir }, { logger: createLogger('silent'), env: ${JSON.stringify(env)} });
  const res = await fetch(gw.url + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-key': 'tg_lazy_load_key_000000000000000000000000001', authorization: 'Bearer sk-x' }, body: '{"model":"gpt-4o-mini","messages":[]}' });
  await res.text();
  await gw.stop();
  const modules = Object.keys(require.cache);
  console.log(JSON.stringify({ status: res.status, otel: modules.some((m) => m.includes('/@opentelemetry/') && !m.includes('/@opentelemetry/api/')), prom: modules.some((m) => m.includes('/prom-client/')) }));
})();`;
      const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await new Promise((r) => child.once('exit', r));
      return JSON.parse(out.trim().split('\n').pop()!);
    };
    const yaml = (metrics: boolean) => `
server: { port: 0 }
storage: { url: "sqlite:DIR/t.db" }
metrics: { enabled: ${metrics} }
providers: { openai: { base_url: "${upstream.url}/openai/v1" } }
workspaces: [{ id: default, keys: [{ id: k, key: "\${GATEWAY_KEY}" }] }]
`;
    expect(await loaded(yaml(false), {})).to.deep.equal({ status: 200, otel: false, prom: false });
    expect(await loaded(yaml(true), {})).to.deep.equal({ status: 200, otel: false, prom: true });
    expect(await loaded(yaml(false), { OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl })).to.deep.equal({
      status: 200,
      otel: true,
      prom: false,
    });
  });
});
