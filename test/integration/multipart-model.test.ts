import { expect } from 'chai';
import { OPENAI_KEY, type TestGateway, useGateway } from '../helpers/gateway';
import { call, expectGatewayError } from '../helpers/reliability';
import { TestUpstream } from '../helpers/upstream';

/**
 * A multipart form with two `model` fields is refused (400 invalid_body): the gateway would price the first while a
 * provider that reads the last bills the other. Small forms (read in memory) and large ones (received into the spool
 * file, the file part first) alike; nothing reaches the provider.
 */
describe('a multipart form with more than one model field is refused', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(upstream, (g) => (gw = g));

  /** A transcription form: the file (of `size` bytes) first, then the given fields in order. */
  const transcription = async (size: number, fields: [string, string][]) => {
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(size, 1)], { type: 'audio/mpeg' }), 'a.mp3');
    for (const [name, value] of fields) form.append(name, value);
    const res = new Response(form);
    const body = Buffer.from(await res.arrayBuffer());
    return call(gw, '/v1/audio/transcriptions', {
      headers: {
        'content-type': res.headers.get('content-type')!,
        'x-gateway-key': gw.key,
        authorization: `Bearer ${OPENAI_KEY}`,
      },
      body,
    });
  };

  for (const [what, size] of [
    ['a small form, read in memory', 1024],
    ['a large form, received into the spool file', 2 * 1024 * 1024],
  ] as const) {
    it(`${what}: 400 invalid_body naming model; one model field is forwarded`, async () => {
      const refused = await transcription(size, [
        ['model', 'whisper-1'],
        ['model', 'gpt-4o-transcribe'],
      ]);
      expectGatewayError(refused, 400, 'invalid_body');
      expect(refused.json.error.param).to.equal('model');
      expect(upstream.received, 'nothing forwarded').to.have.length(0);
      expect((await transcription(size, [['model', 'whisper-1']])).status).to.equal(200);
    });
  }
});
