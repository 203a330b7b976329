import { expect } from 'chai';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** bench/lib/report.mjs prints the "Governance on and off" table (bench/lib/governance-table.mjs) from one run. */
interface Report {
  renderReport(result: unknown): string;
}
const load = (): Promise<Report> => import(pathToFileURL(resolve(__dirname, '../../../bench/lib/report.mjs')).href);

const TARGETS = ['direct', 'bare', 'bare-dispatch', 'tollgate-plain', 'tollgate'];

/** One run of a scenario: latency and TTFB grow with the target's index, CPU and peak RSS are given. */
function run(scenario: string, target: string, cpu: number, rss: number) {
  const i = TARGETS.indexOf(target);
  return {
    scenario,
    target,
    rps: 1000,
    errors: 0,
    non2xx: 0,
    latency_ms: { p50: 1 + i * 0.1, p90: 2, p99: 2 + i * 0.5 },
    ttfb_ms: { p50: 0.5 + i * 0.25, p99: 1 },
    span_ms: { p50: 440 + i * 2.2, p99: 450 },
    gap_ms: { p50: 20, p99: 21 },
    sse_events_per_response: { min: 23, max: 23 },
    procs: target === 'direct' ? {} : { gw: { cpu_us_per_req: cpu, peak_rss_mb: rss } },
  };
}

function result() {
  const runs = [];
  for (const [n, target] of TARGETS.entries()) {
    runs.push(run('chat_c1', target, 100, 100));
    runs.push(run('chat_c32', target, 100 * (n + 1), 120 + n));
    runs.push(run('stream_c8', target, 50 * (n + 1), 140 + n));
    runs.push(run('slow_stream_c8', target, 10, 100));
  }
  return {
    machine: { cpus: 2, mem_gib: 24, node: '24.22.3', platform: 'linux x64' },
    settings: { duration_s: 8, warmup_s: 3, upload_bytes: 20 * 2 ** 20 },
    targets: TARGETS,
    runs,
    sustained: Object.fromEntries(TARGETS.map((t, n) => [t, { sustained_rps: 1000 * (n + 1), steps: [] }])),
    memory: {},
  };
}

/** The table's row that starts with `label`, as its cells. */
function row(report: string, label: string): string[] {
  const section = report.slice(report.indexOf('### Governance on and off'));
  const line = section.split('\n').find((l) => l.startsWith(`| ${label}`));
  expect(line, label).to.be.a('string');
  return line!
    .split('|')
    .slice(2, -1)
    .map((c) => c.trim());
}

describe('bench report: governance on and off beside the bare hops (bench/lib/governance-table.mjs)', () => {
  it('has the columns in order: bare, bare-dispatch, governance off, governance on', async () => {
    const report = (await load()).renderReport(result());
    expect(row(report, '  ')).to.deep.equal(['bare', 'bare-dispatch', 'governance off', 'governance on']);
  });

  it('gives the added p50 / p99 at one connection, the sustained rate and the added stream figures', async () => {
    const report = (await load()).renderReport(result());
    expect(row(report, 'chat, 1 connection')).to.deep.equal([
      '0.100 / 0.500',
      '0.200 / 1.000',
      '0.300 / 1.500',
      '0.400 / 2.000',
    ]);
    expect(row(report, '20 ms provider')).to.deep.equal(['2,000', '3,000', '4,000', '5,000']);
    expect(row(report, 'streams, 20 ms between chunks: added time')).to.deep.equal([
      '0.250',
      '0.500',
      '0.750',
      '1.000',
    ]);
    // 2.2 ms more first-to-last byte per target, over 22 gaps between 23 events.
    expect(row(report, 'streams, 20 ms between chunks: added inter')).to.deep.equal([
      '0.100',
      '0.200',
      '0.300',
      '0.400',
    ]);
  });

  it('gives CPU against the bare hop and the peak RSS of chat at 32 and streams at 8 connections', async () => {
    const report = (await load()).renderReport(result());
    expect(row(report, 'chat, 32 connections')).to.deep.equal(['200', '300 (1.50x)', '400 (2.00x)', '500 (2.50x)']);
    expect(row(report, 'peak RSS MiB, chat')).to.deep.equal(['141', '142', '143', '144']);
  });
});
