import { expect } from 'chai';
import { request } from 'undici';
import { fixtureBytes } from '../helpers/fixtures';
import { OPENAI_KEY, providerBlock, TEST_GATEWAY_KEY } from '../helpers/gateway';
import { npmStartNodeFlags, spawnGateway, stopGateway, type GatewayProcess } from '../helpers/process';
import { sleep, sseChunks, TestUpstream } from '../helpers/upstream';
import { waitFor } from '../helpers/wait';

const IDLE_MS = 500;
const RELEASE_MSG = 'idle: full garbage collections to release memory';

function yaml(upstreamUrl: string): string {
  return `
server: { host: 127.0.0.1, port: 0, idle_gc_ms: ${IDLE_MS} }
logging: { level: debug }
storage: { url: "sqlite:./tollgate.db" }
workspaces: [{ id: default, keys: [{ id: ci, key: "\${GATEWAY_KEY}" }] }]
${providerBlock(upstreamUrl)}
`;
}

const headers = { 'content-type': 'application/json', 'x-gateway-key': TEST_GATEWAY_KEY, authorization: `Bearer ${OPENAI_KEY}` };

async function chat(gw: GatewayProcess, stream = false): Promise<void> {
  const r = await request(`${gw.url}/v1/chat/completions`, {
    method: 'POST', headers, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream }),
  });
  expect(r.statusCode).to.equal(200);
  await r.body.arrayBuffer();
}

/** 300 requests, 10 at a time: enough garbage for a collection to have something to free. */
async function burst(gw: GatewayProcess): Promise<void> {
  await Promise.all(Array.from({ length: 10 }, async () => {
    for (let i = 0; i < 30; i++) await chat(gw);
  }));
}

/** The gateway's log lines with this message, parsed. */
function logged(gw: GatewayProcess, msg: string): Record<string, any>[] {
  return gw.output().filter((l) => l.includes(msg)).map((l) => JSON.parse(l));
}

/**
 * The real process, started with npm start's Node flags: once traffic stops, it gives the memory of the burst
 * back (runtime/memory-policy.ts), without touching requests in flight.
 */
describe('tollgate start: memory is given back once traffic stops (server.idle_gc_ms)', () => {
  const upstream = new TestUpstream();
  let gw: GatewayProcess | undefined;

  before(() => upstream.start());
  afterEach(async () => {
    upstream.reset();
    if (gw) await stopGateway(gw);
    gw = undefined;
  });
  after(() => upstream.stop());

  it('after a burst: collects once, not while a stream is still open, not again while idle, again after the next burst', async function () {
    this.timeout(30_000);
    expect(npmStartNodeFlags(), 'npm start passes --expose-gc').to.include('--expose-gc');
    gw = await spawnGateway(yaml(upstream.url), {}, npmStartNodeFlags());
    const g = gw;

    // Right after the burst, a slow stream stays open for five idle periods: the gateway is not idle meanwhile.
    const events = sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));
    const streamMs = IDLE_MS * 5;
    upstream.respondWith((_req, body) =>
      body?.stream ? { headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: Math.ceil(streamMs / events.length) } : undefined);
    await burst(g);
    const streamStart = Date.now();
    await chat(g, true);
    expect(Date.now() - streamStart, 'the stream lasted').to.be.greaterThan(streamMs * 0.8);
    expect(logged(g, RELEASE_MSG), 'collections while a stream was in flight').to.have.length(0);

    await waitFor(() => logged(g, RELEASE_MSG).length > 0, IDLE_MS * 8, 'a collection after the traffic stopped');
    const [first] = logged(g, RELEASE_MSG);
    const [usedBefore, usedAfter] = first.heapUsedMb as number[];
    expect(usedAfter, `heap used before ${usedBefore} MiB, after ${usedAfter} MiB`).to.be.lessThan(usedBefore);
    console.log(`      heap used ${usedBefore} -> ${usedAfter} MiB, heap total ${first.heapTotalMb.join(' -> ')} MiB, RSS before ${first.rssMb} MiB, ${first.gcMs} ms`);

    await sleep(IDLE_MS * 4);
    expect(logged(g, RELEASE_MSG), 'collections repeated while idle').to.have.length(1);
    expect(logged(g, 'releasing memory of another thread failed'), 'the SQLite writer thread collects too').to.have.length(0);

    await burst(g);
    await waitFor(() => logged(g, RELEASE_MSG).length === 2, IDLE_MS * 8, 'a collection after the second burst');
  });

  it('without --expose-gc: says at start that it is off, and never collects', async () => {
    gw = await spawnGateway(yaml(upstream.url));
    const g = gw;
    await waitFor(() => logged(g, 'idle memory release is off').length === 1, 2000, 'the "off" line at start');
    await burst(g);
    await sleep(IDLE_MS * 3);
    expect(logged(g, RELEASE_MSG)).to.have.length(0);
  });
});
