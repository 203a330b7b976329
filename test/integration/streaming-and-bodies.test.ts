import { expect } from 'chai';
import { sleep } from '../helpers/wait';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { request } from 'undici';
import { fixtureBytes, fixtureJson } from '../helpers/fixtures';
import { ANTHROPIC_KEY, OPENAI_KEY, startTestGateway, type TestGateway, useGateway } from '../helpers/gateway';
import { adminGet } from '../helpers/admin';
import { rawRequest } from '../helpers/raw-http';
import { sseChunks, TestUpstream } from '../helpers/upstream';

const headers = (gw: TestGateway, extra: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  'x-gateway-key': gw.key,
  authorization: `Bearer ${OPENAI_KEY}`,
  ...extra,
});

describe('streams, bodies and the model catalog', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;

  useGateway(upstream, (g) => (gw = g));

  it('relays an SSE stream byte for byte, with the provider headers', async () => {
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: headers(gw),
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream: true }),
    });
    const body = Buffer.from(await res.body.arrayBuffer());
    expect(res.statusCode).to.equal(200);
    expect(res.headers['content-type']).to.equal('text/event-stream; charset=utf-8');
    expect(res.headers['cache-control']).to.equal('no-cache');
    expect(body.equals(fixtureBytes('openai/chat_stream_without_usage.sse'))).to.equal(true);
  });

  it('relays JSON bodies byte for byte (no re-serialisation)', async () => {
    const res = await request(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: headers(gw, { 'x-api-key': ANTHROPIC_KEY }),
      body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 5, messages: [] }),
    });
    expect(Buffer.from(await res.body.arrayBuffer()).equals(fixtureBytes('anthropic/messages_basic.json'))).to.equal(
      true,
    );
  });

  it('a stream asked for but answered with a JSON document: relayed unchanged, its usage measured', async () => {
    // Some providers ignore "stream": true and answer with one JSON body; its usage must not be lost.
    upstream.respondWith(() => ({
      headers: { 'content-type': 'application/json' },
      body: fixtureBytes('openai/chat_completion_cached_tokens.json'),
    }));
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: headers(gw),
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream: true }),
    });
    expect(
      Buffer.from(await res.body.arrayBuffer()).equals(fixtureBytes('openai/chat_completion_cached_tokens.json')),
    ).to.equal(true);
    const id = res.headers['x-gateway-request-id'];
    const deadline = Date.now() + 5000;
    let record: any;
    while (!record && Date.now() < deadline) {
      record = (await adminGet(gw, '/api/requests?limit=1000')).data.find((r: any) => r.id === id);
      if (!record) await sleep(20);
    }
    const usage = fixtureJson('openai/chat_completion_cached_tokens.json').usage;
    expect(record).to.include({
      provenance: 'measured',
      output_tokens: usage.completion_tokens,
      cache_read_tokens: usage.prompt_tokens_details.cached_tokens,
    });
  });

  it('delivers each event as it arrives (no buffering)', async () => {
    const events = sseChunks(fixtureBytes('anthropic/messages_stream.sse'));
    upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: 150 }));
    const res = await request(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: headers(gw, { 'x-api-key': ANTHROPIC_KEY }),
      body: JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 5, messages: [], stream: true }),
    });
    const arrivals: number[] = [];
    const started = Date.now();
    let received = '';
    for await (const chunk of res.body) {
      received += chunk.toString();
      arrivals.push(Date.now() - started);
    }
    expect(received).to.equal(Buffer.concat(events).toString());
    // The first event reaches the client long before the upstream sent the last one.
    expect(arrivals[0]).to.be.lessThan(((events.length - 1) * 150) / 2);
    expect(arrivals.length).to.be.greaterThan(events.length / 2);
  });

  it('aborts the upstream request when the client disconnects mid-stream', async () => {
    const events = sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));
    upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: 100 }));
    const controller = new AbortController();
    const res = await request(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: headers(gw),
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream: true }),
      signal: controller.signal,
    });
    const iterator = res.body[Symbol.asyncIterator]();
    await iterator.next();
    controller.abort();
    const seen = upstream.last();
    await Promise.race([seen.done, sleep(2000)]);
    expect(seen.aborted, 'the upstream connection was not closed').to.equal(true);
  });

  it('routes multipart uploads by their model field and forwards the bytes unchanged', async () => {
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(300_000, 7)], { type: 'audio/mpeg' }), 'speech.mp3');
    form.append('model', 'whisper-1');
    const encoded = new Request('http://x', { method: 'POST', body: form });
    const bytes = Buffer.from(await encoded.arrayBuffer());
    const res = await request(`${gw.url}/v1/audio/transcriptions`, {
      method: 'POST',
      headers: { ...headers(gw), 'content-type': encoded.headers.get('content-type')! },
      body: bytes,
    });
    expect(res.statusCode).to.equal(200);
    expect(await res.body.json()).to.deep.equal(fixtureJson('openai/audio_transcription_docs_example.json'));
    expect(upstream.last().url).to.equal('/openai/v1/audio/transcriptions');
    expect(upstream.last().body.equals(bytes)).to.equal(true);
  });

  it('refuses a multipart upload without a model', async () => {
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(10)]), 'a.mp3');
    const encoded = new Request('http://x', { method: 'POST', body: form });
    const res = await request(`${gw.url}/v1/audio/translations`, {
      method: 'POST',
      headers: { ...headers(gw), 'content-type': encoded.headers.get('content-type')! },
      body: Buffer.from(await encoded.arrayBuffer()),
    });
    expect(res.statusCode).to.equal(400);
    expect(((await res.body.json()) as any).error.code).to.equal('model_missing');
  });

  it('passes audio bytes through (speech)', async () => {
    const res = await request(`${gw.url}/v1/audio/speech`, {
      method: 'POST',
      headers: headers(gw),
      body: JSON.stringify({ model: 'tts-1', input: 'hello', voice: 'alloy' }),
    });
    expect(res.headers['content-type']).to.equal('audio/mpeg');
    expect(Buffer.from(await res.body.arrayBuffer()).toString('latin1')).to.equal('ID3\u0004fake-mpeg-frames');
  });

  it('forwards anthropic-beta and the generic alt-version headers, drops hop-by-hop headers', async () => {
    const head = [
      'POST /v1/messages HTTP/1.1',
      'Host: gateway.example',
      'Content-Type: application/json',
      `X-Gateway-Key: ${gw.key}`,
      `x-api-key: ${ANTHROPIC_KEY}`,
      'anthropic-version: 2023-06-01',
      'anthropic-beta: prompt-caching-2024-07-31',
      'alt-version: 1',
      'Connection: x-hop',
      'x-hop: drop me',
      'Keep-Alive: timeout=5',
      'TE: trailers',
      'x-custom: keep me',
    ].join('\r\n');
    const res = await rawRequest(
      gw.url,
      head,
      JSON.stringify({ model: 'claude-haiku-4-5', max_tokens: 5, messages: [] }),
    );
    expect(res.status).to.equal(200);
    const seen = upstream.last().headers;
    expect(seen['anthropic-beta']).to.equal('prompt-caching-2024-07-31');
    expect(seen['anthropic-version']).to.equal('2023-06-01');
    expect(seen['alt-version']).to.equal('1');
    expect(seen['x-custom']).to.equal('keep me');
    expect(seen['x-hop']).to.equal(undefined);
    expect(seen['x-gateway-key']).to.equal(undefined);
    expect(seen['keep-alive']).to.equal(undefined);
    expect(seen.te).to.equal(undefined);
    expect(seen.host).to.not.equal('gateway.example');
  });

  describe('GET /v1/models', () => {
    it('catalog mode: OpenAI list shape with every provider', async () => {
      const res = await request(`${gw.url}/v1/models`, { headers: { 'x-gateway-key': gw.key } });
      const list = (await res.body.json()) as any;
      expect(list.object).to.equal('list');
      const owners = new Set(list.data.map((m: any) => m.owned_by));
      for (const p of ['openai', 'anthropic', 'perplexity']) expect(owners).to.include(p);
      for (const m of list.data) {
        expect(m).to.have.all.keys('id', 'object', 'created', 'owned_by');
        expect(m.object).to.equal('model');
        expect(m.created).to.be.a('number');
      }
      expect(list.data.map((m: any) => m.id)).to.include('gpt-4o-mini');
    });

    for (const trigger of ['anthropic-version', 'anthropic-beta', 'alt-version', 'alt-beta']) {
      it(`catalog mode: messages-style shape when ${trigger} is sent`, async () => {
        const res = await request(`${gw.url}/v1/models`, {
          headers: { 'x-gateway-key': gw.key, [trigger]: '2023-06-01' },
        });
        const list = (await res.body.json()) as any;
        expect(list.has_more).to.equal(false);
        expect(list.first_id).to.equal(list.data[0].id);
        expect(list.last_id).to.equal(list.data.at(-1).id);
        expect(list.data[0].type).to.equal('model');
      });
    }

    it('passthrough mode: the provider live list, verbatim, with the provider key', async () => {
      const res = await request(`${gw.url}/v1/models`, {
        headers: { 'x-gateway-key': gw.key, 'x-gateway-provider': 'openai', authorization: `Bearer ${OPENAI_KEY}` },
      });
      expect(Buffer.from(await res.body.arrayBuffer()).equals(fixtureBytes('openai/models_list.json'))).to.equal(true);
      expect(upstream.last().url).to.equal('/openai/v1/models');
      expect(upstream.last().headers.authorization).to.equal(`Bearer ${OPENAI_KEY}`);
      expect(upstream.last().headers['x-gateway-provider']).to.equal(undefined);
    });

    it('passthrough mode to the messages-style provider uses x-api-key', async () => {
      await request(`${gw.url}/v1/models`, {
        headers: {
          'x-gateway-key': gw.key,
          'x-gateway-provider': 'anthropic',
          'x-api-key': ANTHROPIC_KEY,
          'anthropic-version': '2023-06-01',
        },
      }).then((r) => r.body.text());
      expect(upstream.last().url).to.equal('/anthropic/v1/models');
      expect(upstream.last().headers['x-api-key']).to.equal(ANTHROPIC_KEY);
    });
  });

  it('graceful shutdown lets an in-flight stream finish', async () => {
    const own = await startTestGateway(upstream.url);
    const events = sseChunks(fixtureBytes('openai/chat_stream_with_usage.sse'));
    upstream.respondWith(() => ({ headers: { 'content-type': 'text/event-stream' }, body: events, delayMs: 40 }));
    const res = await request(`${own.url}/v1/chat/completions`, {
      method: 'POST',
      headers: headers(own),
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream: true }),
    });
    const stopped = own.stop();
    const body = Buffer.from(await res.body.arrayBuffer());
    await stopped;
    expect(body.equals(Buffer.concat(events))).to.equal(true);
  });

  it('a client that stops reading stops the provider too (backpressure: the gateway never buffers the stream)', async () => {
    // A provider that writes 128 MiB of audio as fast as its socket accepts, counting what was accepted.
    const total = 128 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 1);
    let accepted = 0;
    const provider = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': total });
      const pump = () => {
        while (accepted < total) {
          accepted += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
    const own = await startTestGateway(`http://127.0.0.1:${(provider.address() as AddressInfo).port}`);
    try {
      const body = JSON.stringify({ model: 'tts-1', input: 'hello', voice: 'alloy' });
      const socket = connect((own.server.address() as AddressInfo).port, '127.0.0.1');
      socket.write(
        `POST /v1/audio/speech HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
          `x-gateway-key: ${own.key}\r\nauthorization: Bearer ${OPENAI_KEY}\r\n\r\n${body}`,
      );
      let received = 0;
      socket.on('data', (d: Buffer) => (received += d.length));
      await new Promise((resolve) => socket.once('data', resolve));
      socket.pause(); // the client stops reading
      await sleep(1500);
      const whilePaused = accepted;
      await sleep(500);
      // Only the sockets' own buffers (client, gateway and provider side, a few MiB each) can hold the bytes.
      expect(whilePaused, 'bytes the provider could write while the client read nothing').to.be.lessThan(
        48 * 1024 * 1024,
      );
      expect(accepted, 'the provider stays stopped').to.equal(whilePaused);
      socket.resume();
      await new Promise<void>((resolve, reject) => {
        const check = setInterval(() => accepted >= total && received > total && (clearInterval(check), resolve()), 20);
        socket.once('error', reject);
      });
      expect(accepted).to.equal(total);
      socket.destroy();
    } finally {
      await own.stop();
      provider.close();
    }
  });
});
