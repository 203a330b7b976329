/**
 * The JSON the admin API answers, as zod schemas: admin/openapi/document.ts turns them into the JSON Schema
 * (2020-12, the dialect of OpenAPI 3.1) of GET /api/openapi.json. Each object lists every field it sends
 * (additionalProperties: false), so a field added to an answer without its description here fails the tests
 * that check every admin answer against the document. The compile-time checks at the end make tsc fail when
 * a serializer's type and its schema part ways.
 */
import { z } from 'zod';
import { count, named, nextCursor, pico, time, tokens, usd } from './schema-parts';
import { ERROR_CODES, type ErrorCode } from '../../core/errors';
import { ENDPOINT_KEYS } from '../../core/endpoints';
import type { CostProvenance } from '../../records/usage-record';
import type { CostStatus } from '../../storage/counters';
import { BUILTIN_DIMENSIONS } from '../../storage/store';
import type { groupRowJson, recordJson, retentionJson, totalsJson } from '../serialize';
import type { ReadinessChecks } from '../../contracts/readiness';

export { answerSchemas } from './schema-parts';
export {
  CreatedKeyAnswer,
  CreatedKeysAnswer,
  CreateKeyRequest,
  CreateKeysRequest,
  KeysAnswer,
  RevokedKeyAnswer,
} from './key-answers';
export { AlertsAnswer, AlertTestAnswer, AlertTestRequest } from './alert-answers';
import { budgetOrigin } from './budget-answers';
import { ForecastJson } from './alert-answers';

const costStatus = z.enum(['known', 'lower_bound', 'unknown', 'not_counted']).meta({
  description:
    'known: every record has a cost; lower_bound: some are unpriced or not counted, cost_usd is the sum of the others; unknown: none has a cost and some are unpriced (cost_usd null); not_counted: all are audio or images with nothing to price them by (cost_usd null, never "0").',
});
const provenance = z.enum(['measured', 'estimated', 'partial', 'unpriced', 'not_counted', 'failed']);
const endpoint = z.enum(ENDPOINT_KEYS);
const interval = z.enum(['hour', 'day']);
const filters = z
  .record(z.string(), z.string())
  .meta({ description: 'The filters applied, dimension -> value, as given with filter[<dimension>]=<value>.' });

export const Totals = named(
  'UsageTotals',
  z
    .object({
      requests: count('Requests recorded.'),
      input_tokens: count('Input (prompt) tokens, cache reads and writes included.'),
      output_tokens: count('Output (completion) tokens, reasoning included.'),
      cache_read_tokens: count("Input tokens read from the provider's prompt cache."),
      cache_write_tokens: count('Input tokens written to the prompt cache (5-minute cache).'),
      cache_write_1h_tokens: count('Input tokens written to the 1-hour prompt cache.'),
      reasoning_tokens: count('Reasoning tokens (part of output_tokens).'),
      citation_tokens: count('Citation tokens (Perplexity).'),
      search_queries: count('Web searches billed per query.'),
      cost_usd: usd(
        'Exact sum of the known costs in USD; null when no record of the group is priced (never "0").',
      ).nullable(),
      cost_pico: pico('The same sum in integer pico-USD (1e-12 USD), for exact sums on the client side.').nullable(),
      cost_status: costStatus,
      list_cost_usd: usd(
        "The same records' cost at the catalog's list price, before a negotiated discount (pricing.discounts); records without a list cost (list_cost_unknown_count) at their cost. Null when cost_usd is.",
      ).nullable(),
      list_cost_pico: pico('The list cost in integer pico-USD.').nullable(),
      discount_usd: usd('list_cost_usd less cost_usd, what discounts took off; null when cost_usd is.').nullable(),
      list_cost_unknown_count: count('Priced records without a list cost (priced before records kept one).'),
      unpriced_count: count('Records without a known cost.'),
      estimated_count: count('Records whose usage was estimated (the provider reported none).'),
      partial_count: count('Records of streams that did not complete.'),
      error_count: count('Records of failed requests.'),
      cost_disagreement_count: count(
        'Records whose provider-reported cost and the cost computed from tokens and prices differ by more than 1%.',
      ),
      not_counted_count: count('Audio and image records with nothing to price them by: no cost, not counted.'),
    })
    .meta({ description: 'Usage counters of a group (or of everything in range).' }),
);

export const UsageRow = named(
  'UsageRow',
  z.object({
    group: z.record(z.string(), z.string().nullable()).meta({
      description:
        'One entry per group_by dimension: a tag value ("(untagged)" when absent), a built-in value (null when absent), status as a string.',
    }),
    bucket: time('Start of the UTC hour or day (only with interval).').optional(),
    ...Totals.shape,
  }),
);

/** retentionJson's fields (storage.retention.records_days), in the usage answers. */
const retentionFields = {
  records_kept_from: time(
    'Per-request records before this time were deleted by retention; the totals still count them, from the rollups. Null while none were.',
  ).nullable(),
  uncounted: z.array(z.object({ from: time('Start (inclusive).'), to: time('End (exclusive).') })).meta({
    description:
      'Parts of the range that only the deleted records could answer, and that this answer leaves out; empty when nothing is missing.',
  }),
};

export const UsageAnswer = named(
  'UsageAnswer',
  z.object({
    from: time('Start of the range (inclusive).'),
    to: time('End of the range (exclusive).'),
    group_by: z.array(z.string()),
    interval: interval.nullable(),
    filters,
    rows: z
      .array(UsageRow)
      .meta({ description: 'The groups of this page, most expensive first (by bucket first, with interval).' }),
    other: z
      .object({ groups: count('Groups not on this page.'), ...Totals.shape })
      .nullable()
      .meta({
        description:
          'Every group not on this page, summed over the range: rows plus other add up to total. Null when the page holds every group.',
      }),
    total: Totals.nullable().meta({ description: 'Everything in range and filters, ungrouped.' }),
    groups: count('Groups in all pages (with search: the groups that match it).'),
    limit: count('Groups per page.'),
    offset: count('Rank of the first group of this page.'),
    search: z.string().meta({ description: 'The search the groups were paged by; empty: none.' }),
    next_offset: count('Offset of the next page; null on the last.').nullable(),
    ...retentionFields,
  }),
);

const seriesValues = z.object({
  cost_usd: z.array(usd('Cost in the bucket, USD.')),
  cost_pico: z.array(pico('Cost in the bucket, pico-USD.')),
  requests: z.array(count('Requests in the bucket.')),
});
export const SeriesValues = named(
  'SeriesValues',
  seriesValues.meta({ description: 'One value per bucket, in the order of buckets.' }),
);

export const SeriesAnswer = named(
  'UsageSeriesAnswer',
  z.object({
    from: time('Start of the range (inclusive).'),
    to: time('End of the range (exclusive).'),
    group_by: z.string().nullable(),
    interval,
    filters,
    buckets: z.array(time('Start of a UTC hour or day.')),
    series: z.array(
      z.object({
        group: z
          .string()
          .meta({ description: 'The value of the group_by dimension ("(none)" for an absent built-in).' }),
        ...seriesValues.shape,
      }),
    ),
    other: SeriesValues.nullable().meta({ description: 'The total minus the series shown; null without group_by.' }),
    total: SeriesValues,
    ...retentionFields,
  }),
);

export const UsageRecordJson = named(
  'UsageRecord',
  z.object({
    id: z.string().meta({ description: 'The request id (x-gateway-request-id).' }),
    time: time('When the request started.'),
    workspace: z.string().nullable(),
    key_id: z.string().nullable(),
    provider: z.string().nullable(),
    model: z.string().nullable().meta({ description: 'The model the client asked for.' }),
    served_model: z
      .string()
      .nullable()
      .meta({ description: 'The model that served the request (aggregators report it).' }),
    endpoint: endpoint.nullable(),
    status: z.number().int().meta({ description: 'HTTP status answered to the client.' }),
    streamed: z.boolean(),
    input_tokens: tokens('Input tokens; null when unknown.'),
    output_tokens: tokens('Output tokens; null when unknown.'),
    cache_read_tokens: tokens('Cache read tokens; null when unknown.'),
    cache_write_tokens: tokens('Cache write tokens (5-minute cache); null when unknown.'),
    cache_write_1h_tokens: tokens('Cache write tokens (1-hour cache); null when unknown.'),
    reasoning_tokens: tokens('Reasoning tokens; null when unknown.'),
    citation_tokens: tokens('Citation tokens; null when unknown.'),
    search_queries: tokens('Web searches billed; null when unknown.'),
    search_context_size: z
      .string()
      .nullable()
      .meta({ description: "Perplexity's search context size (low, medium, high)." }),
    cost_usd: usd('Exact cost in USD; null when unknown (unpriced).').nullable(),
    cost_pico: pico('The cost in integer pico-USD.').nullable(),
    list_cost_usd: usd(
      "The cost at the catalog's list price, before a negotiated discount; equal to cost_usd without one. Null when the cost is unknown or the record was priced before records kept it.",
    ).nullable(),
    provenance: provenance.meta({ description: 'Where the cost comes from.' }),
    price_version: z.string().nullable().meta({ description: 'Version of the price catalog used.' }),
    latency_ms: z.number().nonnegative(),
    ttfb_ms: z
      .number()
      .nonnegative()
      .nullable()
      .meta({ description: 'Time to the first upstream byte; null when none arrived.' }),
    upstream_ms: z.number().nonnegative().nullable().meta({
      description:
        "The provider's time: from sending the request upstream to the last byte of its answer (a stream's end as relayed). latency_ms - upstream_ms is the gateway's overhead. Null when nothing was sent upstream, and on records written before the gateway kept it.",
    }),
    tags: z.record(z.string(), z.string()),
    error_code: z
      .string()
      .nullable()
      .meta({ description: 'Gateway error code, or upstream_<status>; null on success.' }),
    usage_source: z
      .enum(['provider', 'tokenizer', 'none'])
      .nullable()
      .meta({ description: 'How the token counts were obtained; null for records stored before it was kept.' }),
    provider_cost_usd: usd(
      'The cost the provider reported itself, beside the computed one; null when none.',
    ).nullable(),
    cost_disagrees: z.boolean().nullable().meta({
      description:
        "The provider-reported and computed costs differ by more than 1% plus half the provider's rounding step; null when not both known.",
    }),
    tool_calls: z
      .record(z.string(), z.number().int().nonnegative())
      .nullable()
      .meta({ description: 'Billed tool and server calls by kind (web_search, file_search, ...); null when none.' }),
    price_id: z.string().nullable().meta({ description: 'The catalog entry the cost was priced with.' }),
    service_tier: z.string().nullable().meta({
      description:
        'The service tier the answer says served the request (flex, priority, batch, ...), whose rates priced it; null when it named none.',
    }),
    input_audio_tokens: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .meta({ description: 'Audio tokens of the input, a part of input_tokens; null when none were reported.' }),
    output_audio_tokens: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .meta({ description: 'Audio tokens generated, a part of output_tokens; null when none were reported.' }),
    generation_id: z.string().nullable().meta({
      description: "The aggregator's id of the answer (OpenRouter gen-…), by which reconciliation reads its cost.",
    }),
  }),
);

export const RequestsAnswer = named(
  'RequestsAnswer',
  z.object({
    data: z.array(UsageRecordJson).meta({ description: 'Newest first.' }),
    next_cursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as cursor for the next page; null on the last page.' }),
  }),
);

export const BudgetsAnswer = named(
  'BudgetsAnswer',
  z.object({
    data: z.array(
      z.object({
        ...budgetOrigin,
        workspace: z.string(),
        scope: z.string().meta({
          description:
            '"workspace", or the tag the budget counts, e.g. "customer_id=acme"; "customer_id=*" for a per-tag (or per-key, "key_id=*") budget that no value has spent under or met yet this period, listed once at zero spend.',
        }),
        period: z.enum(['day', 'month']),
        period_start: time('Start of the current period (UTC).'),
        period_end: time('End of the current period.'),
        limit_usd: usd('The limit for the period.'),
        spent_usd: usd('Spent in the period.'),
        reserved_usd: usd('Held by requests in flight.'),
        used_share: z.number().nonnegative().meta({ description: 'spent / limit, to four decimals.' }),
        alert_at: z.array(z.number().gt(0).max(1)).meta({
          description: 'The alert thresholds, shares of the limit, lowest first; each alerts once per period.',
        }),
        alerted: z.boolean().meta({ description: 'Whether spend reached the lowest alert_at x limit in this period.' }),
        action: z.enum(['block', 'alert', 'clamp']).meta({
          description:
            'block: requests that do not fit are refused; alert: a soft budget that never refuses; clamp: their output-token limit is lowered to what is left.',
        }),
        forecast: ForecastJson.nullable(),
      }),
    ),
    next_cursor: nextCursor,
  }),
);

export const DimensionsAnswer = named(
  'DimensionsAnswer',
  z.object({
    builtin: z.array(z.enum(BUILTIN_DIMENSIONS)),
    tags: z.array(z.string()).meta({ description: 'Every tag key in the data.' }),
  }),
);

export const InfoAnswer = named(
  'InfoAnswer',
  z.object({
    proxy_url: z.string().nullable().meta({ description: 'http://host:port of the proxy listener.' }),
    workspaces: z.array(z.object({ id: z.string(), name: z.string().nullable() })),
    has_records: z.boolean(),
    latest_record_at: time('Time of the newest record.').nullable(),
    quarantined_records: z.number().int().min(0).meta({
      description: 'Usage records the store refused for their content, kept in quarantined_records with the error.',
    }),
    records_kept_from: retentionFields.records_kept_from,
    build: z
      .object({
        version: z.string(),
        commit: z
          .string()
          .nullable()
          .meta({ description: 'The commit built; null when built outside a git checkout.' }),
        built_at: time('When `npm run build` ran.'),
      })
      .nullable()
      .meta({ description: 'The build stamp of the running code; null when it was compiled without `npm run build`.' }),
  }),
);

export const HealthAnswer = named(
  'Health',
  z.object({ status: z.literal('ok') }).meta({ description: 'The process is alive and serves HTTP.' }),
);

const readinessCheck = ['store', 'limit_store', 'shutdown'] as const;
export const ReadinessAnswer = named(
  'Readiness',
  z
    .object({
      status: z.enum(['ready', 'degraded', 'not_ready']).meta({
        description:
          'degraded: ready, with a dependency down that readiness does not fail on (probes.readiness.fail_on).',
      }),
      checks: z.object({
        store: z.enum(['ok', 'failed']).meta({
          description:
            'The usage store takes writes (SQLite: its files are writable; PostgreSQL: it answers and is not read-only).',
        }),
        limit_store: z.enum(['ok', 'failed', 'not_configured']).meta({
          description: 'The Redis limit store answers a ping; not_configured when limits are kept in memory.',
        }),
        shutdown: z.enum(['ok', 'draining']).meta({
          description: 'draining once shutdown began: in-flight requests finish, new ones should go elsewhere.',
        }),
      }),
      failed: z
        .array(z.enum(readinessCheck))
        .meta({ description: 'The failed checks that fail readiness (empty when ready).' }),
      degraded: z
        .array(z.enum(readinessCheck))
        .meta({ description: 'The failed checks that do not fail readiness: the instance serves on without them.' }),
    })
    .meta({
      description: 'Whether this instance should get traffic, check by check. Results are at most about a second old.',
    }),
);

const errorTypes = [...new Set(Object.values(ERROR_CODES).map((c) => c.type))] as [string, ...string[]];

/** The gateway's error shape, with `code` narrowed to the codes given. */
export function errorBody(codes: readonly ErrorCode[]) {
  return z.object({
    error: z.object({
      message: z.string(),
      type: z.enum(errorTypes),
      param: z.string().nullable().meta({ description: 'The query parameter or body field at fault, when one is.' }),
      code: z.enum(codes as [ErrorCode, ...ErrorCode[]]),
    }),
  });
}

// Registered under its name for the document's error responses.
named(
  'Error',
  errorBody(Object.keys(ERROR_CODES) as ErrorCode[]).meta({
    description: 'Every error the gateway raises itself: {"error": {message, type, param, code}}; code is stable.',
  }),
);

// ---------------------------------------------------------------- compile-time: serializers match the schemas

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShapes: [
  Same<ReturnType<typeof totalsJson>, z.output<typeof Totals>>,
  Same<ReturnType<typeof groupRowJson>, z.output<typeof UsageRow>>,
  Same<ReturnType<typeof recordJson>, z.output<typeof UsageRecordJson>>,
  Same<z.output<typeof provenance>, CostProvenance>,
  Same<z.output<typeof costStatus>, CostStatus>,
  Same<Awaited<ReturnType<typeof retentionJson>>, z.output<z.ZodObject<typeof retentionFields>>>,
  Same<z.output<typeof ReadinessAnswer>['checks'], ReadinessChecks>,
] = [true, true, true, true, true, true, true];
void sameShapes;
