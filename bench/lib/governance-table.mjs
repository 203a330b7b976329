// The "Governance on and off" table of a bench result: the public method's figures (added p50 and p99 at one
// connection, the sustained rate with a 20 ms provider, added time to first token and inter-token gap for streams,
// peak RSS) and CPU per request, for the bare hops, governance off (`tollgate-plain`) and on (`tollgate`), all from
// the same run.

/** The columns, in order, with their headers. */
const COLUMNS = [
  ['bare', 'bare'],
  ['bare-dispatch', 'bare-dispatch'],
  ['tollgate-plain', 'governance off'],
  ['tollgate', 'governance on'],
];

/**
 * Rows of [label, (target) => cell text]. `t(scenario, target)` is a run; `fmt` holds the report's number helpers;
 * `perChunkAdded` the slow stream's added delay per chunk.
 */
function rows(result, t, fmt, perChunkAdded, sustained) {
  const { num, thousands } = fmt;
  const added = (sc, target, pick) => {
    const r = t(sc, target);
    const d = t(sc, 'direct');
    return r && d ? pick(r) - pick(d) : null;
  };
  const cpu = (sc, target) => t(sc, target)?.procs?.gw?.cpu_us_per_req;
  const cpuCell = (sc) => (target) => {
    const own = cpu(sc, target);
    const bare = cpu(sc, 'bare');
    if (own == null) return '-';
    return target === 'bare' || !bare ? thousands(own) : `${thousands(own)} (${num(own / bare, 2)}x)`;
  };
  const peak = (target, scenarios) => {
    const peaks = scenarios.map((sc) => t(sc, target)?.procs?.gw?.peak_rss_mb).filter((x) => x != null);
    return peaks.length ? num(Math.max(...peaks), 0) : '-';
  };
  return [
    [
      'chat, 1 connection: added p50 / p99 ms',
      (x) =>
        `${num(
          added('chat_c1', x, (r) => r.latency_ms.p50),
          3,
        )} / ${num(
          added('chat_c1', x, (r) => r.latency_ms.p99),
          3,
        )}`,
    ],
    [
      '20 ms provider: sustained req/s (p99 < 1 s, < 0.1% errors)',
      (x) => (sustained?.[x]?.sustained_rps == null ? '-' : thousands(sustained[x].sustained_rps)),
    ],
    [
      'streams, 20 ms between chunks: added time to first token p50 ms',
      (x) =>
        num(
          added('slow_stream_c8', x, (r) => r.ttfb_ms.p50),
          3,
        ),
    ],
    ['streams, 20 ms between chunks: added inter-token gap ms', (x) => num(perChunkAdded(result, x), 3)],
    ['chat, 32 connections: CPU µs per request', cpuCell('chat_c32')],
    ['streams, 8 connections: CPU µs per stream', cpuCell('stream_c8')],
    ['peak RSS MiB, chat at 32 and streams at 8 connections', (x) => peak(x, ['chat_c32', 'stream_c8'])],
    ['peak RSS MiB, 20 ms provider up to 512 connections', (x) => peak(x, ['sustained_20ms'])],
  ];
}

/** The section's lines, or none when the run has neither governed target. */
export function governanceSection(result, { t, table, fmt, perChunkAdded }) {
  const present = COLUMNS.filter(([target]) => result.targets?.includes(target));
  if (!present.some(([target]) => target.startsWith('tollgate'))) return [];
  const body = rows(result, t, fmt, perChunkAdded, result.sustained).map(([label, cell]) => [
    label,
    ...present.map(([target]) => cell(target)),
  ]);
  return [
    '### Governance on and off',
    '',
    '`governance on`: `tollgate` (auth, attribution, required tags, max-tokens, concurrency, rate limits, a live budget, ' +
      'usage recorded to SQLite, metrics); `governance off`: `tollgate-plain` (the key check and header strip only). ' +
      'Added figures are over the direct call; CPU in brackets is over `bare`.',
    '',
    table(['', ...present.map(([, header]) => header)], body),
  ];
}
