import type { Socket } from 'node:net';
import { expect } from 'chai';
import { OPENAI_KEY, TEST_GATEWAY_KEY } from '../helpers/gateway';
import { recordFigures } from '../helpers/figures';
import { rssMb, spawnOneWorkspace, stopGateway, type GatewayProcess } from '../helpers/process';
import { scrape, total } from '../helpers/prometheus';
import { call, chatBody, expectGatewayError, round, type ParsedResponse } from '../helpers/reliability';
import { uploadConnection } from '../helpers/slow-upload';
import { TestUpstream } from '../helpers/upstream';
import { waitFor, sleep } from '../helpers/wait';

const MiB = 2 ** 20;
/** Just under the default body limit (32 MiB): each upload alone is accepted. */
const UPLOAD = 31 * MiB;
const UPLOADS = 60;
/** What one of them reserves: a JSON body counts twice, its bytes and its parsed form (core/body-memory.ts). */
const RESERVED = 2 * UPLOAD;

/**
 * server.max_buffered_bytes bounds the request-body bytes the gateway holds in memory across the requests in flight
 * (runtime/memory-policy.ts, intake/body-intake.ts). What an operator checks, against the real `tollgate start`
 * process: a crowd of large unfinished uploads does not take its memory past the bound, the excess is refused with
 * 503 gateway_busy and Retry-After while other requests are still served, and every reservation comes back however
 * its request ends (tollgate_buffered_request_bytes returns to 0).
 */
describe('request bodies held in memory are bounded (server.max_buffered_bytes)', function () {
  this.timeout(180_000);
  const upstream = new TestUpstream();
  before(() => upstream.start());
  after(() => upstream.stop());

  describe('a bound of 128 MiB', () => {
    const CAP = 128 * MiB;
    let gw: GatewayProcess;
    before(async () => (gw = await startGateway(upstream.url, 'max_buffered_bytes: 128mb')));
    after(() => stopGateway(gw));

    it(`${UPLOADS} concurrent unfinished 31 MiB uploads: the excess get 503 gateway_busy, chat is still served, RSS stays bounded, nothing stays reserved`, async () => {
      await crowd(gw, CAP, '128mb');
    });

    it('a client that leaves mid-upload gives its reservation back at once; the whole bound is free again', async () => {
      const leaving = new Upload(gw.url);
      await leaving.sent;
      expect(await buffered(gw)).to.equal(RESERVED);
      leaving.abort();
      await waitFor(async () => (await buffered(gw)) === 0, 10_000, 'the reservation released');

      // A body sent without a length is counted as it arrives: its reservation grows, and comes back too.
      const chunked = new Upload(gw.url, { chunked: true, send: 20 * MiB });
      await chunked.sent;
      await waitFor(async () => (await buffered(gw)) >= 2 * 16 * MiB, 10_000, 'the chunked body counted as it arrives');
      chunked.abort();
      await waitFor(async () => (await buffered(gw)) === 0, 10_000, 'the chunked reservation released');

      // Nothing leaked: as many uploads as the bound holds are taken again.
      const again = Array.from({ length: Math.floor(CAP / RESERVED) }, () => new Upload(gw.url));
      await Promise.all(again.map((u) => u.sent));
      expect(await buffered(gw)).to.equal(again.length * RESERVED);
      expect(again.filter((u) => u.answered)).to.deep.equal([]);
      for (const u of again) u.abort();
      await waitFor(async () => (await buffered(gw)) === 0, 10_000, 'every reservation released');
    });

    it('past the bound any new body is refused before it is read; a body without a length is cut with 503 once it grows past it', async () => {
      // 32 MiB + 31 MiB, twice each: 126 MiB reserved. A first read (64 KiB) of a chunked body still fits; once it
      // passes 1 MiB, it does not.
      const held = [32, 31].map((mib) => new Upload(gw.url, { size: mib * MiB }));
      await Promise.all(held.map((u) => u.sent));
      expect(await buffered(gw)).to.equal(126 * MiB);
      const growing = new Upload(gw.url, { chunked: true, send: 4 * MiB });
      expectBusy(await growing.answer);
      expect(await buffered(gw), 'what the cut body had reserved is back').to.equal(126 * MiB);

      // The last 2 MiB taken by a 1 MiB body whose headers alone arrived: the bound is reached to the byte.
      const last = new Upload(gw.url, { size: MiB, send: 0 });
      await waitFor(async () => (await buffered(gw)) === CAP, 10_000, 'the bound reached');
      expectBusy(await new Upload(gw.url, { chunked: true, send: 0 }).answer);
      const small = await chat(gw);
      expectGatewayError(small, 503, 'gateway_busy');
      expect(small.headers['retry-after']).to.equal('1');
      expect(await buffered(gw)).to.equal(CAP);

      for (const u of [last, ...held]) u.abort();
      await waitFor(async () => (await buffered(gw)) === 0, 10_000, 'every reservation released');
      expect((await chat(gw)).status).to.equal(200);
    });
  });

  describe('the default bound (512 MiB)', () => {
    let gw: GatewayProcess;
    before(async () => (gw = await startGateway(upstream.url, '')));
    after(() => stopGateway(gw));

    it(`${UPLOADS} concurrent unfinished 31 MiB uploads: 8 held, the rest refused, RSS stays bounded, nothing stays reserved`, async () => {
      await crowd(gw, 512 * MiB, 'default');
    });
  });
});

/**
 * The real `tollgate start` process; its one workspace may take the whole bound (workspace_buffered_bytes: 100%):
 * the bound itself is under test here, the shares in test/integration/body-shares.test.ts.
 */
function startGateway(upstreamUrl: string, server: string): Promise<GatewayProcess> {
  return spawnOneWorkspace(upstreamUrl, `workspace_buffered_bytes: 100%${server ? `, ${server}` : ''}`);
}

/**
 * The scenario the bound is for: UPLOADS uploads of 31 MiB arrive at once and stop just before their end. The
 * gateway takes as many as fit in the bound, refuses the others before reading them, answers chat meanwhile, and
 * gives every byte back once the uploads end (one completes, the others are abandoned).
 */
async function crowd(gw: GatewayProcess, cap: number, figure: string): Promise<void> {
  const pid = gw.child.pid!;
  expect((await chat(gw)).status).to.equal(200); // warmed up: the baseline includes what the first request loads
  const rssBefore = rssMb(pid);
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(pid))), 100);
  let rssDuring: number;
  const admitted = Math.floor(cap / RESERVED);
  try {
    const uploads = Array.from({ length: UPLOADS }, () => new Upload(gw.url));
    // A refused upload is answered 503 and its connection closed while the client is still sending. The gateway does
    // not read on (it is short of body memory), so the kernel may reset the connection before the client reads the
    // 503: the refusals are counted as closed connections, each answer read is checked to be the 503, and the
    // gateway's own count of gateway_busy is checked below.
    await waitFor(() => uploads.filter((u) => u.closed).length >= UPLOADS - admitted, 60_000, 'the excess refused');
    const held = uploads.filter((u) => !u.closed);
    await Promise.all(held.map((u) => u.sent));
    expect(held, 'uploads being read').to.have.length(admitted);
    for (const u of uploads.filter((x) => x.answered)) expectBusy(await u.answer);

    // Meanwhile the gateway answers other requests, and holds exactly the admitted bodies' reservations.
    expect((await chat(gw)).status).to.equal(200);
    expect(await buffered(gw)).to.equal(admitted * RESERVED);
    rssDuring = await steadyRssMb(pid);
    expect(
      uploads.filter((u) => u.closed),
      'nothing more refused or answered',
    ).to.have.length(UPLOADS - admitted);

    // One completes (it is parsed and forwarded as any request), the others are abandoned.
    const [finishing, ...leaving] = held;
    finishing.finish();
    for (const u of leaving) u.abort();
    expect((await finishing.answer)?.status, 'a held upload, completed').to.equal(200);
    await waitFor(async () => (await buffered(gw)) === 0, 20_000, 'every reservation released');
  } finally {
    clearInterval(sampler);
  }
  const samples = await scrape(gw.adminUrl!);
  expect(total(samples, 'tollgate_errors_total', { code: 'gateway_busy' })).to.equal(UPLOADS - admitted);
  expect((await chat(gw)).status).to.equal(200);
  const rssAfter = rssMb(pid);
  rssPeak = Math.max(rssPeak, rssDuring, rssAfter);

  // Each admitted body is read into one buffer of its declared size and reserved twice (parsed, it is about as
  // large again), so the bodies and their parsed forms stay within the bound. Around them: the socket reads (64 KiB
  // buffers, garbage once copied; V8 collects for such memory about every 64 MB), the JSON text of the body being
  // parsed (at most the 32 MiB body limit, one at a time), a heap let grow 200% while bulk bodies are held
  // (runtime/memory-policy.ts) and 60 clients' connections. 128 MB covers those with room; without the bound, the
  // same uploads took RSS up by 1.8 GB.
  const bound = cap / MiB + 128;
  console.log(
    `      ${UPLOADS} × 31 MiB, bound ${cap / MiB} MiB: ${admitted} held, ${UPLOADS - admitted} refused; RSS ${round(rssBefore)} MB before, ${round(rssDuring)} MB held (peak ${round(rssPeak)} MB, bound +${bound} MB), ${round(rssAfter)} MB after`,
  );
  recordFigures('buffered-bodies', figure, {
    uploads: UPLOADS,
    upload_mib: UPLOAD / MiB,
    cap_mib: cap / MiB,
    held: admitted,
    refused: UPLOADS - admitted,
    rss_before_mb: round(rssBefore),
    rss_during_mb: round(rssDuring),
    rss_peak_mb: round(rssPeak),
    rss_after_mb: round(rssAfter),
    bound_mb: bound,
  });
  expect(rssPeak - rssBefore, `RSS ${round(rssBefore)} → peak ${round(rssPeak)} MB`).to.be.lessThan(bound);
  expect(gw.child.exitCode, 'the gateway is still up').to.equal(null);
}

function expectBusy(answer: ParsedResponse | undefined): void {
  expect(answer, 'an answer before the connection closed').to.not.equal(undefined);
  const headers = Object.fromEntries(answer!.headers);
  const text = answer!.body.toString('utf8');
  expectGatewayError({ status: answer!.status, text, json: JSON.parse(text), headers }, 503, 'gateway_busy');
  expect(headers['retry-after']).to.equal('1');
  expect(headers.connection).to.equal('close');
}

/** A chat request through undici, as a client would send it. */
const chat = (gw: GatewayProcess) =>
  call({ url: gw.url, key: TEST_GATEWAY_KEY }, '/v1/chat/completions', { body: chatBody() });

/** tollgate_buffered_request_bytes, as Prometheus would scrape it. */
async function buffered(gw: GatewayProcess): Promise<number> {
  return total(await scrape(gw.adminUrl!), 'tollgate_buffered_request_bytes');
}

/** RSS once the bytes in the sockets' buffers have been read: two samples 300 ms apart within 2 MB. */
async function steadyRssMb(pid: number): Promise<number> {
  let last = rssMb(pid);
  for (let i = 0; i < 100; i++) {
    await sleep(300);
    const now = rssMb(pid);
    if (Math.abs(now - last) < 2) return now;
    last = now;
  }
  return last;
}

/** One MiB of the chat message's text, written again and again (one buffer: the client itself holds no more). */
const FILLER = Buffer.alloc(MiB, 'a');
const PREFIX = Buffer.from('{"model":"gpt-4o-mini","messages":[{"role":"user","content":"');
const SUFFIX = Buffer.from('"}]}');

/**
 * A chat request of `size` bytes (valid JSON) on a raw connection, of which `send` bytes are sent at once (by default
 * all but the last MiB): the gateway holds what it read, and waits for the rest. finish() sends the rest, abort()
 * leaves. Sent chunked, it has no declared length.
 */
class Upload {
  private readonly socket: Socket;
  private readonly size: number;
  private readonly chunked: boolean;
  private readonly sentBytes: number;
  /** The gateway's answer, once it closed the connection (every answer here closes it); undefined: none came. */
  readonly answer: Promise<ParsedResponse | undefined>;
  /** The first `send` bytes were handed to the kernel (or the connection is gone). */
  readonly sent: Promise<void>;
  answered = false;
  /** The connection closed, with or without an answer read (see crowd()). */
  closed = false;

  constructor(url: string, options: { size?: number; send?: number; chunked?: boolean } = {}) {
    this.size = options.size ?? UPLOAD;
    this.chunked = options.chunked ?? false;
    this.sentBytes = Math.min(options.send ?? this.size - MiB, this.size);
    const connection = uploadConnection(url, (answered) => {
      this.closed = true;
      this.answered = answered;
    });
    this.socket = connection.socket;
    this.answer = connection.answer;
    const length = this.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${this.size}`;
    this.socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nX-Gateway-Key: ${TEST_GATEWAY_KEY}\r\nAuthorization: Bearer ${OPENAI_KEY}\r\nConnection: close\r\n${length}\r\n\r\n`,
    );
    this.sent = this.write(0, this.sentBytes);
  }

  /** Sends the rest of the body: the request is complete. */
  finish(): void {
    void this.write(this.sentBytes, this.size);
    if (this.chunked) this.socket.write('0\r\n\r\n');
  }

  abort(): void {
    this.socket.destroy();
  }

  /** Writes bytes [from, to) of the body; resolves once they are handed to the kernel. */
  private write(from: number, to: number): Promise<void> {
    const middleEnd = this.size - SUFFIX.length;
    let done: Promise<void> = Promise.resolve();
    for (let at = from; at < to;) {
      let piece: Buffer;
      if (at < PREFIX.length) piece = PREFIX.subarray(at, Math.min(PREFIX.length, to));
      else if (at < middleEnd) piece = FILLER.subarray(0, Math.min(MiB, middleEnd - at, to - at));
      else piece = SUFFIX.subarray(at - middleEnd, to - middleEnd);
      at += piece.length;
      if (this.chunked) this.socket.write(`${piece.length.toString(16)}\r\n`);
      done = new Promise((resolve) => this.socket.write(piece, () => resolve()));
      if (this.chunked) this.socket.write('\r\n');
    }
    return done;
  }
}
