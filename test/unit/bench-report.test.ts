import { expect } from 'chai';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** bench/lib/report.mjs judges the benchmark's targets; the recorder's verdict rests on medianInterval. */
interface Report {
  medianInterval(xs: number[]): { median: number; lo: number; hi: number; coverage: number };
  targets(
    result: unknown,
  ): { name: string; measured: string | null; met: boolean | 'inconclusive' | null; note: string }[];
}
const load = (): Promise<Report> => import(pathToFileURL(resolve(__dirname, '../../../bench/lib/report.mjs')).href);

/** A result with nothing but the recorder's alternating runs (ratios of req/s with the recorder to without). */
function recorderVerdict(report: Report, ratios: number[]) {
  const rounds = ratios.map((ratio) => ({ on_rps: 1000 * ratio, off_rps: 1000, ratio }));
  const result = {
    settings: { upload_bytes: 20 * 2 ** 20 },
    runs: [],
    memory: { recorder_ab: { method: 'alternating', rounds, median_ratio: 0 } },
  };
  return report.targets(result).find((t) => t.name.startsWith('usage recorder cost'))!;
}

describe('bench report: the usage recorder target (bench/lib/report.mjs)', () => {
  it('gives the median and a sign-test interval: the 2nd to the 8th of nine values, 96.1%', async () => {
    const { medianInterval } = await load();
    const ci = medianInterval([0.95, 0.7, 1.1, 0.9, 0.85, 1.0, 0.8, 0.93, 0.88]);
    expect(ci).to.include({ median: 0.9, lo: 0.8, hi: 1.0 });
    expect(ci.coverage).to.be.closeTo(1 - 20 / 512, 1e-12);
  });

  it('falls back to the smallest and largest value, with their lower coverage, when too few runs give 95%', async () => {
    const { medianInterval } = await load();
    expect(medianInterval([3, 1, 2])).to.deep.equal({ median: 2, lo: 1, hi: 3, coverage: 0.75 });
  });

  it('is met only when the whole interval is at or above -10%, not met when below it, else inconclusive', async () => {
    const report = await load();
    expect(recorderVerdict(report, [0.96, 0.91, 0.97, 0.93, 1.02, 0.9, 0.95, 0.99, 0.94]).met).to.equal(true);
    expect(recorderVerdict(report, [0.8, 0.85, 0.78, 0.88, 0.83, 0.91, 0.86, 0.82, 0.8]).met).to.equal(false);
    const noisy = recorderVerdict(report, [0.7, 1.2, 0.86, 0.95, 0.5, 1.3, 0.92, 0.88, 1.05]);
    expect(noisy.met).to.equal('inconclusive');
    expect(noisy.note).to.contain('96% interval of the median: -30.0% to +20.0%');
  });
});

describe('bench report: the cost of metrics and tracing (bench/lib/report.mjs)', () => {
  const costs = (cpu: number[]) => {
    const rounds = cpu.map((cpu_ratio, i) => ({ ratio: 0.97, cpu_ratio, on_cpu_us: 200 + i, off_cpu_us: 190 + i }));
    return {
      settings: { upload_bytes: 20 * 2 ** 20 },
      runs: [],
      memory: {
        metrics_ab: { method: 'alternating', off: 'tollgate-nometrics', on: 'tollgate', rounds },
        tracing_ab: {
          method: 'alternating',
          off: 'tollgate',
          on: 'tollgate-traced',
          rounds,
          spans: { exported: 9000, requests: 9001 },
        },
      },
    };
  };

  it('reports the median of the gateway CPU per request ratios, their interval and the µs added', async () => {
    const report = await load();
    const rows = report.targets(costs([1.05, 1.02, 1.08, 1.04, 1.03, 1.06, 1.01, 1.04, 1.07]));
    const metrics = rows.find((t) => t.name.startsWith('Prometheus metrics cost'))!;
    expect(metrics.measured).to.equal('+4.0% gw CPU/req (+10 µs)');
    expect(metrics.met).to.equal('inconclusive'); // the interval straddles the +3% goal
    expect(metrics.note)
      .to.contain('96% interval of the median: +2.0% to +7.0%')
      .and.to.contain('req/s: -3.0% (median)');
    const tracing = rows.find((t) => t.name.startsWith('tracing cost'))!;
    expect(tracing.note).to.contain('9,000 spans exported for 9,001 requests');
  });

  it('holds metrics to +3% and tracing to +5% of CPU per request, on the whole interval of the median', async () => {
    const report = await load();
    const verdicts = (cpu: number[]) =>
      report
        .targets(costs(cpu))
        .filter((t) => /^(Prometheus metrics|tracing) cost/.test(t.name))
        .map((t) => t.met);
    expect(verdicts([1.01, 1.02, 1.0, 1.01, 1.02, 1.01, 1.0, 1.02, 1.01])).to.deep.equal([true, true]);
    expect(verdicts([1.04, 1.04, 1.045, 1.04, 1.04, 1.045, 1.04, 1.04, 1.04])).to.deep.equal([false, true]);
    expect(verdicts([1.1, 1.12, 1.09, 1.11, 1.1, 1.08, 1.1, 1.13, 1.1])).to.deep.equal([false, false]);
  });
});
