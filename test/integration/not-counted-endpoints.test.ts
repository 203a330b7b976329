import { expect } from 'chai';
import OpenAI, { toFile } from 'openai';
import { waitForRecord } from '../framework/helpers';
import { adminGet } from '../helpers/admin';
import { fixtureBytes } from '../helpers/fixtures';
import { OPENAI_KEY, type TestGateway, useGateway } from '../helpers/gateway';
import { TestUpstream } from '../helpers/upstream';

const jsonReply = (file: string) => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: fixtureBytes(file),
});

/**
 * Spec 8: image and audio requests are passed through and work, but are not counted toward cost totals. The
 * answers used here report token usage and the models have token prices, so a gateway that counted them would
 * have something to count.
 */
describe('images and transcriptions: relayed, recorded, not counted', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(upstream, (g) => (gw = g));

  const client = () =>
    new OpenAI({
      apiKey: OPENAI_KEY,
      baseURL: `${gw.url}/v1`,
      maxRetries: 0,
      defaultHeaders: { 'X-Gateway-Key': gw.key },
    });

  const cases = [
    {
      endpoint: 'images.generations',
      path: '/openai/v1/images/generations',
      fixture: 'openai/images_generations_docs_example.json',
      send: () => client().images.generate({ model: 'gpt-image-1', prompt: 'A cute baby sea otter' }).asResponse(),
      model: 'gpt-image-1',
    },
    {
      endpoint: 'audio.transcriptions',
      path: '/openai/v1/audio/transcriptions',
      fixture: 'openai/audio_transcription_docs_example.json',
      send: async () =>
        client()
          .audio.transcriptions.create({
            model: 'gpt-4o-transcribe',
            file: await toFile(Buffer.from('ID3\u0004fake-mpeg-frames'), 'speech.mp3', { type: 'audio/mpeg' }),
          })
          .asResponse(),
      model: 'gpt-4o-transcribe',
    },
  ];

  for (const c of cases) {
    it(`${c.endpoint}: the answer byte for byte, a record that is not counted and costs nothing`, async () => {
      upstream.respondWith(() => jsonReply(c.fixture));
      const res = await c.send();
      expect(res.status).to.equal(200);
      expect(
        Buffer.from(await res.arrayBuffer()).equals(fixtureBytes(c.fixture)),
        'the provider answer, unchanged',
      ).to.equal(true);
      expect(upstream.last().url).to.equal(c.path);

      const record = await waitForRecord(gw, res.headers.get('x-gateway-request-id'));
      expect(record).to.include({
        endpoint: c.endpoint,
        model: c.model,
        provider: 'openai',
        status: 200,
        provenance: 'not_counted',
      });
      expect(record.cost_usd).to.equal(null);
      expect(record.cost_pico).to.equal(null);
      expect(res.headers.get('x-gateway-cost'), 'no cost is announced to the client').to.equal(null);

      // Not counted is neither a cost nor an unknown cost: the endpoint's total stays $0, known.
      const total = (await adminGet(gw, `/api/usage?filter[endpoint]=${c.endpoint}`)).total;
      expect(total).to.include({ requests: 1, cost_pico: '0', cost_usd: '0', cost_status: 'known', unpriced_count: 0 });
    });
  }
});
