import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { expect } from 'chai';
import OpenAI, { toFile } from 'openai';
import { request } from 'undici';
import { bulkBodiesInFlight, relayedBodyBytes } from '../../runtime/memory-policy';
import { waitForRecords } from '../helpers/admin';
import { fixtureBytes, fixtureJson } from '../helpers/fixtures';
import { OPENAI_KEY, type TestGateway, useGateway, openaiClient } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';
import { waitFor, sleep } from '../helpers/wait';

/**
 * Multipart uploads from 1 MiB on (server.upload_spool_from) are received into a temporary file rather than
 * memory, then sent upstream from it (services/upload-spool.ts). What a user checks: the upload arrives unchanged and
 * is routed and recorded as before, and no file or descriptor outlives the request, however it ends.
 */
describe('large uploads, spooled to a temporary file', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(upstream, (g) => (gw = g), 'server: { body_limit: 8mb }');

  const spoolDir = () => join(gw.dataDir, 'uploads');
  /** Files in the spool directory (there should never be any: each is unlinked once opened). */
  const spoolFiles = () => readdirSync(spoolDir());
  /** Descriptors this process (the in-process gateway) holds on spool files, unlinked or not. */
  const openSpoolFiles = () =>
    readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).includes('tollgate-upload-');
      } catch {
        return false; // closed while listing
      }
    });
  const nothingLeft = async () => {
    await waitFor(() => openSpoolFiles().length === 0 && gw.gateway.proxy.inflight === 0, 5000, 'spool files closed');
    expect(spoolFiles()).to.deep.equal([]);
    expect(bulkBodiesInFlight(), 'the heap growth bound restored (runtime/memory-policy.ts)').to.equal(0);
  };
  /** A form with its file first (what the Node SDK sends for `{ file, model }`), or its fields first (Python's SDK). */
  const form = async (
    file: Buffer,
    fields: Record<string, string>,
    order: 'file first' | 'fields first' = 'file first',
  ) => {
    const data = new FormData();
    const addFile = () => data.append('file', new Blob([new Uint8Array(file)], { type: 'audio/mpeg' }), 'speech.mp3');
    if (order === 'file first') addFile();
    for (const [k, v] of Object.entries(fields)) data.append(k, v);
    if (order === 'fields first') addFile();
    const encoded = new Request('http://x', { method: 'POST', body: data });
    return { bytes: Buffer.from(await encoded.arrayBuffer()), contentType: encoded.headers.get('content-type')! };
  };
  const gatewayHeaders = (contentType: string) => ({
    'x-gateway-key': gw.key,
    authorization: `Bearer ${OPENAI_KEY}`,
    'content-type': contentType,
  });
  /** A body sent without a length (chunked), in 64 KiB pieces. */
  const chunked = (bytes: Buffer) =>
    Readable.from(
      (function* () {
        for (let i = 0; i < bytes.length; i += 65_536) yield bytes.subarray(i, i + 65_536);
      })(),
    );

  it('the official SDK uploads a 6 MB file sent before its model field: routed by the model, forwarded whole, recorded', async () => {
    const audio = randomBytes(6 * 1024 * 1024);
    const client = new OpenAI({
      apiKey: OPENAI_KEY,
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key, 'X-Gateway-Metadata-Feature': 'voice-notes' },
    });
    const result = await client.audio.transcriptions.create({
      file: await toFile(audio, 'speech.mp3', { type: 'audio/mpeg' }),
      model: 'whisper-1',
    });

    expect(result).to.deep.equal(fixtureJson('openai/audio_transcription_docs_example.json'));
    const seen = upstream.last();
    expect(seen.url).to.equal('/openai/v1/audio/transcriptions');
    expect(seen.headers['content-length']).to.equal(String(seen.body.length));
    const fileAt = seen.body.indexOf(audio);
    expect(fileAt, 'the file, unchanged').to.be.greaterThan(0);
    expect(seen.body.indexOf('name="model"'), 'the model field comes after the file').to.be.greaterThan(fileAt);
    const [record] = (await waitForRecords(gw, 1)).filter((r: any) => r.endpoint === 'audio.transcriptions');
    expect(record).to.include({ model: 'whisper-1', provider: 'openai', status: 200 });
    expect(record.tags).to.deep.equal({ feature: 'voice-notes' });
    await nothingLeft();
  });

  it('a 5 MB upload sent chunked (no length), model first: received whole, then the same bytes reach the provider, with their length', async () => {
    const { bytes, contentType } = await form(
      randomBytes(5 * 1024 * 1024),
      { model: 'whisper-1', response_format: 'json' },
      'fields first',
    );
    const res = await request(`${gw.url}/v1/audio/translations`, {
      method: 'POST',
      headers: gatewayHeaders(contentType),
      body: chunked(bytes),
    });
    expect(res.statusCode).to.equal(200);
    await res.body.dump();
    const seen = upstream.last();
    expect(seen.body.equals(bytes)).to.equal(true);
    expect(seen.headers['content-length']).to.equal(String(bytes.length));
    expect(seen.headers['transfer-encoding']).to.equal(undefined);
    await nothingLeft();
  });

  it('an upload over the body limit, sent chunked: 413 once the limit is passed, nothing forwarded, nothing left', async () => {
    const { bytes, contentType } = await form(randomBytes(10 * 1024 * 1024), { model: 'whisper-1' });
    const res = await request(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: gatewayHeaders(contentType),
      body: chunked(bytes),
    });
    expect(res.statusCode).to.equal(413);
    expect(((await res.body.json()) as any).error.code).to.equal('body_too_large');
    expect(upstream.received.length).to.equal(0);
    await nothingLeft();
  });

  it('a malformed form found only at its end: 400 invalid_body, nothing forwarded, nothing left', async () => {
    const { bytes, contentType } = await form(randomBytes(2 * 1024 * 1024), { model: 'whisper-1' });
    const truncated = bytes.subarray(0, bytes.length - 100); // the closing boundary is missing
    const res = await request(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: gatewayHeaders(contentType),
      body: truncated,
    });
    expect(res.statusCode).to.equal(400);
    expect(((await res.body.json()) as any).error.code).to.equal('invalid_body');
    expect(upstream.received.length).to.equal(0);
    await nothingLeft();
  });

  it('a client that leaves mid-upload: nothing forwarded, the file closed', async () => {
    const { bytes, contentType } = await form(randomBytes(4 * 1024 * 1024), { model: 'whisper-1' });
    const url = new URL(gw.url);
    const socket = connect(Number(url.port), url.hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    const head = [
      'POST /v1/audio/transcriptions HTTP/1.1',
      `Host: ${url.host}`,
      `X-Gateway-Key: ${gw.key}`,
      `Authorization: Bearer ${OPENAI_KEY}`,
      `Content-Type: ${contentType}`,
      `Content-Length: ${bytes.length}`,
      '',
      '',
    ].join('\r\n');
    socket.write(head);
    socket.write(bytes.subarray(0, 2 * 1024 * 1024));
    await waitFor(() => openSpoolFiles().length > 0, 5000, 'the upload being spooled');
    socket.destroy();
    await nothingLeft();
    expect(upstream.received.length).to.equal(0);
  });

  it('a spool directory that has gone: 503 upload_storage_failed with an error log line; small uploads still pass', async () => {
    rmSync(spoolDir(), { recursive: true });
    try {
      const big = await form(randomBytes(2 * 1024 * 1024), { model: 'whisper-1' });
      const res = await request(`${gw.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: gatewayHeaders(big.contentType),
        body: big.bytes,
      });
      expect(res.statusCode).to.equal(503);
      expect(((await res.body.json()) as any).error.code).to.equal('upload_storage_failed');
      expect(gw.logs.some((l) => l.includes('upload could not be spooled to disk'))).to.equal(true);
      expect(upstream.received.length).to.equal(0);

      const small = await form(randomBytes(100_000), { model: 'whisper-1' });
      const ok = await request(`${gw.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: gatewayHeaders(small.contentType),
        body: small.bytes,
      });
      expect(ok.statusCode).to.equal(200);
      await ok.body.dump();
      expect(upstream.last().body.equals(small.bytes)).to.equal(true);
    } finally {
      mkdirSync(spoolDir(), { recursive: true });
    }
  });

  describe('a form whose model comes before its file streams through (routed when the file part begins)', () => {
    /** Opens a raw connection and sends the request head (no provider key when `withKey` is false) and `firstBytes` of the body. */
    const startUpload = async (bytes: Buffer, contentType: string, firstBytes: number, withKey = true) => {
      const url = new URL(gw.url);
      const socket = connect(Number(url.port), url.hostname);
      await new Promise((resolve) => socket.once('connect', resolve));
      let answer = '';
      socket.on('data', (d) => (answer += d.toString('latin1')));
      socket.on('error', () => undefined); // the gateway may close the connection while the rest is still being sent
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.write(
        [
          'POST /v1/audio/transcriptions HTTP/1.1',
          `Host: ${url.host}`,
          `X-Gateway-Key: ${gw.key}`,
          ...(withKey ? [`Authorization: Bearer ${OPENAI_KEY}`] : []),
          `Content-Type: ${contentType}`,
          `Content-Length: ${bytes.length}`,
          'Connection: close',
          '',
          '',
        ].join('\r\n'),
      );
      socket.write(bytes.subarray(0, firstBytes));
      return { socket, answer: () => answer, closed };
    };

    it('the provider receives the file while the client is still sending it; the same bytes, with their length; recorded', async () => {
      const audio = randomBytes(6 * 1024 * 1024);
      const { bytes, contentType } = await form(audio, { model: 'whisper-1', response_format: 'json' }, 'fields first');
      const half = 3 * 1024 * 1024;
      const relayedBefore = relayedBodyBytes();
      const body = new PassThrough();
      body.write(bytes.subarray(0, half));
      const headers = {
        ...gatewayHeaders(contentType),
        'content-length': String(bytes.length),
        'x-gateway-metadata-feature': 'voice-notes',
      };
      const answered = request(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers, body });
      await waitFor(() => upstream.bodyBytesArrived >= 2 * 1024 * 1024, 5000, 'the provider receiving the first half');
      expect(upstream.received.length, 'the provider has not seen the end yet').to.equal(0);
      expect(openSpoolFiles(), 'nothing spooled').to.deep.equal([]);
      expect(bulkBodiesInFlight(), 'a streamed upload leaves the heap growth bound as it is').to.equal(0);
      body.end(bytes.subarray(half));

      const res = await answered;
      expect(res.statusCode).to.equal(200);
      expect(await res.body.json()).to.deep.equal(fixtureJson('openai/audio_transcription_docs_example.json'));
      const requestId = res.headers['x-gateway-request-id'];
      const seen = upstream.last();
      expect(seen.url).to.equal('/openai/v1/audio/transcriptions');
      expect(seen.body.equals(bytes), 'the body, unchanged').to.equal(true);
      expect(seen.headers['content-length']).to.equal(String(bytes.length));
      expect(seen.headers['transfer-encoding']).to.equal(undefined);
      // Counted for young collections (runtime/memory-policy.ts): all but the chunks read before the file began.
      const relayed = relayedBodyBytes() - relayedBefore;
      expect(relayed, 'bytes relayed as they arrived').to.be.within(bytes.length - 256 * 1024, bytes.length);
      await waitFor(async () => (await waitForRecords(gw, 1)).some((r: any) => r.id === requestId), 5000, 'its record');
      const record = (await waitForRecords(gw, 1)).find((r: any) => r.id === requestId);
      expect(record).to.include({
        model: 'whisper-1',
        provider: 'openai',
        status: 200,
        endpoint: 'audio.transcriptions',
      });
      expect(record.tags).to.deep.equal({ feature: 'voice-notes' });
      await nothingLeft();
    });

    it('the official SDK with `{ model, file }` (model first): routed, forwarded whole', async () => {
      const audio = randomBytes(3 * 1024 * 1024);
      const client = openaiClient(gw);
      const result = await client.audio.transcriptions.create({
        model: 'whisper-1',
        file: await toFile(audio, 'speech.mp3', { type: 'audio/mpeg' }),
      });
      expect(result).to.deep.equal(fixtureJson('openai/audio_transcription_docs_example.json'));
      const seen = upstream.last();
      expect(seen.body.indexOf('name="model"'), 'the model field comes before the file').to.be.lessThan(
        seen.body.indexOf(audio),
      );
      expect(seen.body.indexOf(audio)).to.be.greaterThan(0);
      expect(seen.headers['content-length']).to.equal(String(seen.body.length));
      await nothingLeft();
    });

    it("a client that leaves mid-file: the provider's request is cut too, nothing is left", async () => {
      const { bytes, contentType } = await form(randomBytes(6 * 1024 * 1024), { model: 'whisper-1' }, 'fields first');
      const { socket } = await startUpload(bytes, contentType, 3 * 1024 * 1024);
      await waitFor(() => upstream.bodyBytesArrived >= 2 * 1024 * 1024, 5000, 'the provider receiving the first half');
      socket.destroy();
      await waitFor(() => upstream.bodiesCut === 1, 5000, "the provider's request cut");
      await nothingLeft();
      expect(upstream.received.length).to.equal(0);
    });

    it('refused once routed (no provider key): the error comes while the client is still sending, nothing is forwarded', async () => {
      const { bytes, contentType } = await form(randomBytes(4 * 1024 * 1024), { model: 'whisper-1' }, 'fields first');
      const { socket, answer, closed } = await startUpload(bytes, contentType, 1024 * 1024, false);
      await waitFor(() => answer().includes('provider_key_missing'), 5000, 'the error before the rest of the body');
      expect(answer().split('\r\n')[0]).to.equal('HTTP/1.1 401 Unauthorized');
      socket.end(bytes.subarray(1024 * 1024));
      await closed;
      expect(upstream.bodyBytesArrived).to.equal(0);
      await nothingLeft();
    });
  });

  describe('bulk bodies: the heap growth bound is widened while one is in flight (runtime/memory-policy.ts)', () => {
    /** Counts bulk bodies in flight while the test upstream holds its answer back. */
    const heldDuring = async (send: () => Promise<{ statusCode: number; body: { dump(): Promise<void> } }>) => {
      const relayedBefore = relayedBodyBytes();
      const answered = send();
      await waitFor(() => upstream.received.length > 0, 5000, 'the request reaching the provider');
      const during = bulkBodiesInFlight();
      const res = await answered;
      await res.body.dump();
      expect(res.statusCode).to.equal(200);
      await nothingLeft();
      expect(
        relayedBodyBytes() - relayedBefore,
        'a body held whole, or a JSON answer, is not counted for young collections',
      ).to.equal(0);
      return during;
    };

    it('a 2 MiB upload holds it until its answer is relayed; a chat request does not', async () => {
      upstream.respondWith(() => ({
        status: 200,
        body: fixtureBytes('openai/audio_transcription_docs_example.json'),
        headerDelayMs: 300,
      }));
      const { bytes, contentType } = await form(randomBytes(2 * 1024 * 1024), { model: 'whisper-1' });
      expect(
        await heldDuring(() =>
          request(`${gw.url}/v1/audio/transcriptions`, {
            method: 'POST',
            headers: gatewayHeaders(contentType),
            body: bytes,
          }),
        ),
      ).to.equal(1);

      upstream.received.length = 0;
      upstream.respondWith(() => ({
        status: 200,
        body: fixtureBytes('openai/chat_completion_cached_tokens.json'),
        headerDelayMs: 300,
      }));
      const chat = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
      expect(
        await heldDuring(() =>
          request(`${gw.url}/v1/chat/completions`, {
            method: 'POST',
            headers: gatewayHeaders('application/json'),
            body: chat,
          }),
        ),
      ).to.equal(0);
    });

    it('a body sent chunked (no length) holds it only once it turned out to be 2 MiB, not when it is a small chat request', async () => {
      upstream.respondWith(() => ({
        status: 200,
        body: fixtureBytes('openai/chat_completion_cached_tokens.json'),
        headerDelayMs: 300,
      }));
      // A stream body without a length: undici sends it with Transfer-Encoding: chunked.
      const chunked = (text: string) => () =>
        request(`${gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: gatewayHeaders('application/json'),
          body: Readable.from([Buffer.from(text)]),
        });
      const small = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
      expect(await heldDuring(chunked(small)), 'a small chunked chat request').to.equal(0);

      upstream.received.length = 0;
      const image = JSON.stringify({
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'x'.repeat(2 * 1024 * 1024) }],
      });
      expect(await heldDuring(chunked(image)), 'a 2 MiB chunked request, while its answer is awaited').to.equal(1);
    });

    it('an answer of 2 MiB read whole (JSON) holds it until it is sent; one relayed as a stream (audio) does not', async () => {
      const halves = (b: Buffer) => [b.subarray(0, 1024 * 1024), b.subarray(1024 * 1024)];
      const image = Buffer.from(
        JSON.stringify({ created: 1, data: [{ b64_json: randomBytes(1536 * 1024).toString('base64') }] }),
      );
      upstream.respondWith(() => ({
        status: 200,
        headers: { 'content-type': 'application/json', 'content-length': String(image.length) },
        body: halves(image),
        delayMs: 300,
      }));
      const prompt = JSON.stringify({ model: 'gpt-image-1', prompt: 'a toll gate at dawn' });
      const beforeImage = relayedBodyBytes();
      const generated = request(`${gw.url}/v1/images/generations`, {
        method: 'POST',
        headers: gatewayHeaders('application/json'),
        body: prompt,
      });
      await waitFor(() => upstream.received.length > 0, 5000, 'the request reaching the provider');
      await sleep(150); // between the answer's halves (300 ms apart): the gateway holds the first
      const whileHeld = bulkBodiesInFlight();
      const res = await generated;
      expect(res.statusCode).to.equal(200);
      expect(Buffer.from(await res.body.arrayBuffer()).equals(image)).to.equal(true);
      expect(whileHeld).to.equal(1);
      expect(relayedBodyBytes() - beforeImage, 'an answer read whole is not counted for young collections').to.equal(0);
      await nothingLeft();

      const audio = randomBytes(2 * 1024 * 1024);
      upstream.respondWith(() => ({
        status: 200,
        headers: { 'content-type': 'audio/mpeg', 'content-length': String(audio.length) },
        body: halves(audio),
        delayMs: 300,
      }));
      const speech = JSON.stringify({ model: 'tts-1', input: 'hello', voice: 'alloy' });
      const relayedBefore = relayedBodyBytes();
      const streamed = await request(`${gw.url}/v1/audio/speech`, {
        method: 'POST',
        headers: gatewayHeaders('application/json'),
        body: speech,
      });
      expect(streamed.statusCode).to.equal(200);
      // Counted at the first bytes: the second half comes 300 ms later.
      const chunks: Buffer[] = [];
      let during = -1;
      for await (const chunk of streamed.body) {
        if (during < 0) during = bulkBodiesInFlight();
        chunks.push(chunk as Buffer);
      }
      expect(during).to.equal(0);
      expect(Buffer.concat(chunks).equals(audio)).to.equal(true);
      expect(
        relayedBodyBytes() - relayedBefore,
        'the streamed answer, counted for young collections (runtime/memory-policy.ts)',
      ).to.equal(audio.length);
      await nothingLeft();
    });
  });
});
