import { expect } from 'chai';
import { request } from 'undici';
import { TEST_ADMIN_TOKEN } from './gateway';

/** One sample of the Prometheus text format: metric name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses the exposition text (version 0.0.4): every sample line; comments and blank lines are skipped. */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(LABEL))
      labels[k] = v.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of the samples of `name` whose labels include `match` (0 when there is none). */
export function total(samples: readonly Sample[], name: string, match: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);
}

/** The samples of `name` whose labels include `match`. */
export function samplesOf(samples: readonly Sample[], name: string, match: Record<string, string> = {}): Sample[] {
  return samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}

/** GET /metrics on the admin listener with the admin token (or `token`); asserts 200 and parses the answer. */
export async function scrape(adminUrl: string, token: string | null = TEST_ADMIN_TOKEN): Promise<Sample[]> {
  const res = await request(`${adminUrl}/metrics`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  const text = await res.body.text();
  expect(res.statusCode, text.slice(0, 300)).to.equal(200);
  expect(res.headers['content-type']).to.equal('text/plain; version=0.0.4; charset=utf-8');
  return parseMetrics(text);
}
