import type { Socket } from 'node:net';
import { expect } from 'chai';
import { type TestGateway, useGateway } from '../helpers/gateway';
import { chatRequestBytes, pipeline } from '../helpers/pipelined';
import { call, chatBody, parseResponses } from '../helpers/reliability';
import { recordedResponder, TestUpstream } from '../helpers/upstream';
import { waitFor, sleep } from '../helpers/wait';

/**
 * HTTP/1.1 pipelining is bounded (runtime/pipelining.ts): a connection's requests are answered in order, started
 * one at a time, at most 16 wait before the gateway stops reading, and those waiting when the connection closes
 * are never started. Real HTTP on loopback against an in-process gateway.
 */
describe('pipelined requests are answered in order and bounded per connection', function () {
  this.timeout(30_000);
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(upstream, (g) => (gw = g));

  it('answers 30 pipelined requests in the order sent', async () => {
    // Chat (forwarded) and the model list (answered by the gateway itself) alternate: the answers show the order.
    const models = Buffer.from(`GET /v1/models HTTP/1.1\r\nHost: gateway\r\nX-Gateway-Key: ${gw.key}\r\n\r\n`);
    const requests = Array.from({ length: 30 }, (_, i) => (i % 2 ? models : chatRequestBytes(gw.key)));
    const socket = pipeline(gw.url, Buffer.concat(requests), 1, true);
    const received: Buffer[] = [];
    socket.on('data', (c: Buffer) => received.push(c));
    await waitFor(() => parseResponses(Buffer.concat(received)).responses.length === 30, 10_000, '30 answers');
    socket.destroy();
    const answers = parseResponses(Buffer.concat(received)).responses;
    expect(answers.map((a) => a.status)).to.deep.equal(Array(30).fill(200));
    const kinds = answers.map((a) => (JSON.parse(a.body.toString()).object === 'list' ? 'models' : 'chat'));
    expect(kinds).to.deep.equal(Array.from({ length: 30 }, (_, i) => (i % 2 ? 'models' : 'chat')));
  });

  it('a client that pipelines thousands and never reads gets one started at a time, others are served, and closing drops the rest', async () => {
    // 16 KiB answers: the kernel's socket buffers fill after a few hundred, then the gateway's writes wait.
    const big = Buffer.from(JSON.stringify({ object: 'chat.completion', choices: [], pad: 'x'.repeat(16 * 1024) }));
    upstream.respondWith(() => ({ headers: { 'content-type': 'application/json' }, body: big }));
    const socket = pipeline(gw.url, chatRequestBytes(gw.key), 5000);
    let seen = -1;
    await waitFor(
      async () => {
        const now = upstream.received.length;
        const still = now === seen;
        seen = now;
        if (!still) await sleep(300);
        return still && now > 0;
      },
      20_000,
      'the gateway stopped starting requests',
    );
    const started = upstream.received.length;
    expect(started, 'requests started before the gateway stopped').to.be.lessThan(5000);
    expect(gw.gateway.proxy.inflight, 'at most one in flight for the connection').to.be.at.most(1);

    expect((await call(gw, '/v1/chat/completions', { body: chatBody() })).status, 'another client').to.equal(200);

    socket.destroy();
    await waitFor(() => gw.gateway.proxy.inflight === 0, 5000, 'its request released');
    await sleep(300);
    expect(upstream.received.length, 'nothing started after the connection closed (but the other client)').to.equal(
      started + 1,
    );
  });

  it('pipelined requests of many connections share server.pipelined_in_flight places, and every connection is served in turn', async () => {
    const CONNECTIONS = 20;
    const PER_CONNECTION = 4;
    // Each answer waits 100 ms upstream, so requests answered at once are seen at once. The upstream counts, at
    // every moment, the pipelined requests (each connection's second on, content "c-i") it holds; each leaves the
    // count as its answer starts, before the gateway can see it end.
    let pipelinedNow = 0;
    let pipelinedMost = 0;
    upstream.respondWith((req, json) => {
      const reply = recordedResponder(req, json);
      if (!reply || !/^\d+-[1-9]$/.test(json?.messages?.[0]?.content)) return reply && { ...reply, headerDelayMs: 100 };
      pipelinedMost = Math.max(pipelinedMost, ++pipelinedNow);
      return { ...reply, until: sleep(100).then(() => pipelinedNow--) };
    });
    const received = Array.from({ length: CONNECTIONS }, () => [] as Buffer[]);
    const sockets = received.map((chunks, c) => {
      const requests = Array.from({ length: PER_CONNECTION }, (_, i) =>
        chatRequestBytes(gw.key, undefined, `${c}-${i}`),
      );
      const socket = pipeline(gw.url, Buffer.concat(requests), 1, true);
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      return socket;
    });
    const answered = () => received.map((chunks) => parseResponses(Buffer.concat(chunks)).responses.length);
    await sleep(150); // the first requests are in; another client is answered beside the pipelined ones
    expect((await call(gw, '/v1/chat/completions', { body: chatBody() })).status, 'another client').to.equal(200);
    await waitFor(() => answered().every((n) => n === PER_CONNECTION), 20_000, 'every pipelined request answered');
    for (const s of sockets) s.destroy();
    // Unbounded by connection, each of the 20 connections had its next request answered at once (20 at a time).
    expect(pipelinedMost, 'pipelined requests answered at once, over all connections').to.be.within(1, 2);
    const statuses = (c: number) => parseResponses(Buffer.concat(received[c])).responses.map((a) => a.status);
    for (let c = 0; c < CONNECTIONS; c++) expect(statuses(c), `connection ${c}`).to.deep.equal([200, 200, 200, 200]);
  });

  it('a connection pipelining 50 requests to an unknown path without a key gets one 404, then the gateway closes it; with a key it stays open', async () => {
    const unknown = (key: string | undefined) => chatRequestBytes(key, '/v1/no-such-endpoint');
    const answers = await answersUntilClosed(pipeline(gw.url, unknown(undefined), 50, true));
    expect(answers.map((a) => a.status)).to.deep.equal([404]);
    expect(answers[0].headers).to.deep.include(['connection', 'close']);
    expect(JSON.parse(answers[0].body.toString()).error.code).to.equal('route_not_found');

    const keyed = pipeline(gw.url, unknown(gw.key), 3, true);
    const keyedReceived: Buffer[] = [];
    keyed.on('data', (c: Buffer) => keyedReceived.push(c));
    await waitFor(() => parseResponses(Buffer.concat(keyedReceived)).responses.length === 3, 5000, 'three answers');
    expect(keyed.destroyed, 'the keyed connection is still open').to.equal(false);
    keyed.destroy();
    expect(upstream.received, 'nothing forwarded').to.have.length(0);
  });

  for (const [name, key] of [
    ['no key', undefined],
    ['a wrong key', 'tg_wrong_key'],
  ] as const) {
    it(`a connection pipelining 50 requests with ${name} gets one 401, then the gateway closes it`, async () => {
      const answers = await answersUntilClosed(pipeline(gw.url, chatRequestBytes(key), 50, true));
      expect(answers.map((a) => a.status)).to.deep.equal([401]);
      expect(answers[0].headers).to.deep.include(['connection', 'close']);
      expect(upstream.received, 'nothing forwarded').to.have.length(0);
      // A client with its key on a new connection is served as usual.
      expect((await call(gw, '/v1/chat/completions', { body: chatBody() })).status).to.equal(200);
    });
  }
});

/** The answers a connection receives until the gateway closes it. */
async function answersUntilClosed(socket: Socket) {
  const received: Buffer[] = [];
  socket.on('data', (c: Buffer) => received.push(c));
  let closed = false;
  socket.once('close', () => (closed = true));
  await waitFor(() => closed, 5000, 'the gateway closed the connection');
  return parseResponses(Buffer.concat(received)).responses;
}
