/**
 * A body refused before it was read to its end (413 body_too_large here; 503 gateway_busy and 408 body_timeout
 * close the same way) must reach the client as the answer, not as a connection reset: the client below is still
 * sending its body and reads only afterwards, which is when closing with unread bytes made the kernel reset the
 * connection and the answer was lost (core/lingering-close.ts).
 */
import { connect } from 'node:net';
import { expect } from 'chai';
import { OPENAI_KEY, startTestGateway, type TestGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const MiB = 2 ** 20;

/** Declares `declared` bytes, sends `send` of them without reading, then reads: the status line, or the error. */
function upload(
  url: string,
  key: string,
  declared: number,
  send: number,
): Promise<{ status?: number; error?: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.pause(); // nothing read until the body is sent, like a client busy writing
    const chunks: Buffer[] = [];
    const done = (error?: string) => {
      const text = Buffer.concat(chunks).toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      resolve(status ? { status: Number(status) } : { error: error ?? 'closed without an answer' });
    };
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', (err: NodeJS.ErrnoException) => done(err.code));
    socket.on('end', () => done());
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nX-Gateway-Key: ${key}\r\n` +
        `Authorization: Bearer ${OPENAI_KEY}\r\nContent-Length: ${declared}\r\n\r\n`,
    );
    socket.write(Buffer.alloc(send, 0x20), () => setTimeout(() => socket.resume(), 200));
  });
}

describe('an early refusal of an upload reaches the client as its answer, never as a reset', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  before(async () => {
    await upstream.start();
    gw = await startTestGateway(upstream.url, 'server: { body_limit: 1mb }');
  });
  after(async () => {
    await gw?.stop();
    await upstream.stop();
  });

  it('20 uploads declaring 64 MiB over a 1 MiB limit, each sending 8 MiB before reading: every one reads its 413', async function () {
    this.timeout(60_000);
    const results = [];
    for (let i = 0; i < 20; i++) results.push(await upload(gw.url, gw.key, 64 * MiB, 8 * MiB));
    expect(results.filter((r) => r.status !== 413)).to.deep.equal([]);
  });
});
