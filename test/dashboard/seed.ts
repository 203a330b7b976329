/** Seeds a test gateway with varied records through real proxied requests (recorded provider replies). */
import { request } from 'undici';
import { waitForRecords } from '../helpers/admin';
import { ANTHROPIC_KEY, OPENAI_KEY, type TestGateway } from '../helpers/gateway';

const AGENTS = ['support-bot', 'writer', 'triage'];
const FEATURES = ['chat', 'summarize', 'search', 'draft'];
const CUSTOMERS = ['acme', 'globex', 'initech', 'umbrella', 'hooli'];

export interface Seeded {
  count: number;
  /** Tag sets sent, in order. */
  tags: Record<string, string>[];
}

/** `count` requests: OpenAI (measured and estimated streams), Anthropic, and an unpriced model, with varied tags. */
export async function seedThroughProxy(gw: TestGateway, count: number): Promise<Seeded> {
  const tags: Record<string, string>[] = [];
  for (let i = 0; i < count; i++) {
    const t: Record<string, string> = {
      agent: AGENTS[i % 3],
      feature: FEATURES[(i * 7) % 4],
      customer_id: CUSTOMERS[(i * 3) % 5],
    };
    if (i % 4 === 0) t.team = i % 8 === 0 ? 'payments' : 'growth';
    tags.push(t);
    const kind = i % 6;
    const meta = { 'x-gateway-metadata': JSON.stringify(t) };
    let res;
    if (kind === 3) {
      res = await request(`${gw.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gateway-key': gw.key,
          'x-api-key': ANTHROPIC_KEY,
          'anthropic-version': '2023-06-01',
          ...meta,
        },
        body: JSON.stringify({
          model: 'claude-sonnet-4-5',
          max_tokens: 100,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      });
    } else {
      const body =
        kind === 4
          ? { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say this is a test' }], stream: true } // no usage in the stream: estimated
          : kind === 5
            ? { model: 'codestral-nobody-priced-this', messages: [] } // no price: unpriced
            : { model: i % 2 ? 'gpt-4o' : 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
      res = await request(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gateway-key': gw.key,
          authorization: `Bearer ${OPENAI_KEY}`,
          ...meta,
        },
        body: JSON.stringify(body),
      });
    }
    await res.body.text();
    if (res.statusCode !== 200) throw new Error(`seed request ${i} answered ${res.statusCode}`);
  }
  const stored = await waitForRecords(gw, count, 10_000);
  if (stored.length < count) throw new Error(`only ${stored.length} of ${count} records were stored`);
  return { count, tags };
}
