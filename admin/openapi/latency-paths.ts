/** GET /api/latency (admin/dashboard/latency.ts), for the OpenAPI document. */
import { z } from 'zod';
import { LATENCY_SAMPLE_MAX } from '../dashboard/latency';
import { BUCKETS_MAX } from '../query-params';
import { intervalParam, rangeParams } from './parameters';
import { json, reading, ref } from './responses';
import { count, named, time } from './schema-parts';

const ms = (description: string) => z.number().nonnegative().nullable().meta({ description });
const quantiles = (what: string) =>
  z.object({
    p50: ms(`Median ${what} of the sampled requests, ms; null when none.`),
    p95: ms(`95th percentile ${what} of the sampled requests, ms; null when none.`),
  });
const perBucket = (description: string) => z.array(ms(description));

export const LatencyAnswer = named(
  'LatencyAnswer',
  z.object({
    from: time('Start of the range (inclusive).'),
    to: time('End of the range (exclusive).'),
    interval: z.enum(['hour', 'day']),
    filters: z.record(z.string(), z.string()).meta({ description: 'The filters applied, dimension -> value.' }),
    buckets: z.array(time('Start of a UTC hour or day.')),
    sample: z
      .object({
        records: count('Records the percentiles and error codes were computed from.'),
        limit: count('Most records one answer reads for them.'),
        complete: z.boolean().meta({ description: 'Whether the sample holds every record of the range.' }),
        oldest: time('Time of the oldest sampled record; null when none.').nullable(),
      })
      .meta({
        description: `At most ${LATENCY_SAMPLE_MAX} records spread over the range: the newest of each bucket (of each group of neighbouring buckets past 500), a range-wide percentile weighing each by its bucket's requests over its sampled ones.`,
      }),
    models: z.array(
      z.object({
        provider: z.string(),
        model: z.string().meta({ description: 'The model that served ("(none)" when absent).' }),
        requests: count('Requests in the range (exact, from the rollups).'),
        errors: count('Failed requests in the range (exact).'),
        sampled: count('Of them, in the sample.'),
        timed: count(
          "Of the sampled, those whose provider's time is known (upstream_ms), which overhead_ms describes.",
        ),
        latency_ms: quantiles('total latency'),
        ttfb_ms: quantiles('time to the first byte from the provider'),
        overhead_ms: quantiles(
          "gateway overhead (latency_ms - upstream_ms: the latency less the provider's time from sending upstream to the answer's last byte)",
        ),
        series: z
          .object({
            latency_p50: perBucket('Median latency per bucket, ms.'),
            latency_p95: perBucket('p95 latency per bucket, ms.'),
            ttfb_p50: perBucket('Median time to first byte per bucket, ms.'),
            ttfb_p95: perBucket('p95 time to first byte per bucket, ms.'),
            overhead_p50: perBucket('Median gateway overhead per bucket, ms.'),
            overhead_p95: perBucket('p95 gateway overhead per bucket, ms.'),
          })
          .meta({ description: 'One value per bucket, null where the sample holds none.' }),
      }),
    ),
    models_other: count('Provider and model pairs left out (the 20 busiest are listed).'),
    errors: z.object({
      requests: count('Requests in the range (exact).'),
      errors: count('Failed requests in the range (exact).'),
      by_status: z.array(
        z.object({ status: z.number().int(), requests: count('Requests.'), errors: count('Failed.') }),
      ),
      by_code: z
        .array(z.object({ error_code: z.string(), status: z.number().int(), requests: count('Sampled requests.') }))
        .meta({ description: 'Error codes in the sample, most frequent first.' }),
      series: z.object({
        requests: z.array(count('Requests in the bucket (exact).')),
        errors: z.array(count('Failed requests in the bucket (exact).')),
      }),
    }),
  }),
);

export const latencyPaths = {
  '/api/latency': {
    get: {
      operationId: 'getLatency',
      summary:
        'Latency, time-to-first-byte and gateway-overhead percentiles per provider and model over time, and the error rate',
      description: `Requests and errors are exact (rollups); the percentiles and error codes come from the range's newest ${LATENCY_SAMPLE_MAX} records, a bounded read whatever the range holds. At most ${BUCKETS_MAX} buckets.`,
      tags: ['usage'],
      parameters: [...rangeParams, intervalParam('Bucket size; default hour for ranges up to three days, else day.')],
      responses: {
        '200': json(LatencyAnswer, 'Percentiles per provider and model, errors by status and code.'),
        '400': ref('InvalidUsageQuery'),
        ...reading,
      },
    },
  },
};
