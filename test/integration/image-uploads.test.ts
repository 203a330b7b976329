import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { toFile } from 'openai';
import { waitForRecord } from '../framework/helpers';
import { fixtureBytes } from '../helpers/fixtures';
import { OPENAI_KEY, type TestGateway, useGateway, openaiClient } from '../helpers/gateway';
import { TestUpstream, type ReceivedRequest } from '../helpers/upstream';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Upload bytes: a PNG signature, then noise (the gateway forwards the file without reading it). */
const png = (size: number) => Buffer.concat([PNG_SIGNATURE, randomBytes(size - PNG_SIGNATURE.length)]);

/** The form the provider received, parsed by the platform's own multipart reader. */
async function formReceived(seen: ReceivedRequest): Promise<FormData> {
  return new Response(new Uint8Array(seen.body), {
    headers: { 'content-type': String(seen.headers['content-type']) },
  }).formData();
}

async function fileBytes(form: FormData, name: string): Promise<Buffer> {
  const file = form.get(name);
  expect(file, `form field ${name}`).to.be.instanceOf(Blob);
  return Buffer.from(await (file as Blob).arrayBuffer());
}

/**
 * POST /v1/images/edits and /v1/images/variations from the official SDK: multipart uploads routed by their model
 * field, forwarded whole, and the provider's answer relayed byte for byte (recorded dall-e-2 answer), priced per image.
 */
describe('image edits and variations through the gateway (openai SDK)', () => {
  const upstream = new TestUpstream();
  let gw: TestGateway;
  useGateway(upstream, (g) => (gw = g));

  const client = () => openaiClient(gw);
  const answer = fixtureBytes('openai/images_generations.json');

  it('images.edit: image (2 MB, past the in-memory limit for uploads) and mask arrive unchanged with the prompt', async () => {
    const image = png(2 * 1024 * 1024);
    const mask = png(64 * 1024);
    const prompt = 'A sunlit indoor lounge area with a pool containing a flamingo';
    const res = await client()
      .images.edit({
        model: 'dall-e-2',
        prompt,
        size: '256x256',
        image: await toFile(image, 'lounge.png', { type: 'image/png' }),
        mask: await toFile(mask, 'mask.png', { type: 'image/png' }),
      })
      .asResponse();
    expect(res.status).to.equal(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(answer), 'the provider answer, unchanged').to.equal(true);

    const seen = upstream.last();
    expect(seen.method).to.equal('POST');
    expect(seen.url).to.equal('/openai/v1/images/edits');
    expect(seen.headers.authorization).to.equal(`Bearer ${OPENAI_KEY}`);
    expect(seen.headers['content-length']).to.equal(String(seen.body.length));
    const form = await formReceived(seen);
    expect((await fileBytes(form, 'image')).equals(image), 'the image, unchanged').to.equal(true);
    expect((await fileBytes(form, 'mask')).equals(mask), 'the mask, unchanged').to.equal(true);
    expect([form.get('model'), form.get('prompt'), form.get('size')]).to.deep.equal(['dall-e-2', prompt, '256x256']);

    const record = await waitForRecord(gw, res.headers.get('x-gateway-request-id'));
    expect(record).to.include({
      endpoint: 'images.edits',
      model: 'dall-e-2',
      provider: 'openai',
      status: 200,
      provenance: 'measured',
    });
    // One image (the answer's data) at the dall-e-2 price of the size the form asked for (pricing/media-prices.json).
    expect(record.cost_usd).to.equal('0.016');
  });

  it('images.createVariation: the image arrives unchanged with n and size', async () => {
    const image = png(96 * 1024);
    const res = await client()
      .images.createVariation({
        model: 'dall-e-2',
        n: 2,
        size: '512x512',
        image: await toFile(image, 'otter.png', { type: 'image/png' }),
      })
      .asResponse();
    expect(res.status).to.equal(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(answer), 'the provider answer, unchanged').to.equal(true);

    const seen = upstream.last();
    expect(seen.url).to.equal('/openai/v1/images/variations');
    expect(seen.headers.authorization).to.equal(`Bearer ${OPENAI_KEY}`);
    const form = await formReceived(seen);
    expect((await fileBytes(form, 'image')).equals(image), 'the image, unchanged').to.equal(true);
    expect([form.get('model'), form.get('n'), form.get('size')]).to.deep.equal(['dall-e-2', '2', '512x512']);

    const record = await waitForRecord(gw, res.headers.get('x-gateway-request-id'));
    expect(record).to.include({
      endpoint: 'images.variations',
      model: 'dall-e-2',
      provider: 'openai',
      status: 200,
      provenance: 'measured',
    });
    // Two asked for, one in the answer: one 512x512 image is billed.
    expect(record.cost_usd).to.equal('0.018');
  });
});
