/**
 * The OpenAPI 3.1 description of the admin API, served at GET /api/openapi.json. Answer bodies come from the
 * zod schemas of ./answers (JSON Schema 2020-12, OpenAPI 3.1's own dialect); the query parameters mirror
 * ../query-params.ts and share its limits. It describes the API, never an instance: no URL, workspace or
 * data of a deployment, so it is served without the admin token.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { BUCKETS_MAX } from '../query-params';
import { BULK_KEYS_MAX } from '../key-admin';
import { FOCUS_TAGS_MAX, SERIES_VALUES_MAX } from '../dashboard/api';
import {
  AlertsAnswer,
  AlertTestAnswer,
  AlertTestRequest,
  answerSchemas,
  BudgetsAnswer,
  CreatedKeyAnswer,
  CreatedKeysAnswer,
  CreateKeyRequest,
  CreateKeysRequest,
  DimensionsAnswer,
  HealthAnswer,
  InfoAnswer,
  ReadinessAnswer,
  KeysAnswer,
  RequestsAnswer,
  RevokedKeyAnswer,
  SeriesAnswer,
  UsageAnswer,
} from './answers';
import { budgetCreatePath, budgetWritePaths } from './budget-paths';
import { freezePaths } from './freeze-paths';
import { reconciliationPaths } from './reconciliation-paths';
import { latencyPaths } from './latency-paths';
import { groupBy, intervalParam, pageParams, param, rangeParams, usageCsvQuery, usageQuery } from './parameters';
import {
  bare,
  COMPONENTS,
  error,
  guarded,
  json,
  reading,
  writing,
  ref,
  responses,
  retryAfter,
  schemaOf,
  type Json,
} from './responses';

/** A CSV download's 200 answer: the file, and the name its Content-Disposition gives it. */
const csvFile = (description: string, filename: string) => ({
  description,
  headers: {
    'Content-Disposition': {
      description: `attachment; filename="${filename}"`,
      required: true,
      schema: { type: 'string' },
    },
  },
  content: { 'text/csv': { schema: { type: 'string' } } },
});

const paths = {
  '/api/openapi.json': {
    get: {
      operationId: 'getOpenApi',
      summary: 'This document',
      description: 'The OpenAPI description of the admin API. No admin token: it holds nothing of the deployment.',
      security: [],
      tags: ['meta'],
      responses: {
        '200': {
          description: 'The OpenAPI 3.1 document.',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
      },
    },
  },
  '/api/usage': {
    get: {
      operationId: 'getUsage',
      summary: 'Usage and cost grouped by any dimension',
      tags: ['usage'],
      parameters: usageQuery,
      responses: {
        '200': json(UsageAnswer, 'A page of the groups, most expensive first, the others summed, and the total.'),
        '400': ref('InvalidUsageQuery'),
        ...reading,
      },
    },
  },
  '/api/usage.csv': {
    get: {
      operationId: 'getUsageCsv',
      summary: 'The grouping of GET /api/usage as CSV',
      description:
        'Same parameters, page and numbers as GET /api/usage. One line per group (and bucket), then, when groups were left out of the page, one line "(N other groups)" summing them; CRLF line ends; columns: the group_by dimensions, bucket (with interval), then requests, tokens, cost_usd, cost_status, cost_share_pct and the record counts, and last the export\'s range and filters on every line: range_from and range_to (ISO 8601, UTC, to excluded) and filter[<dimension>] per filter, so that the file stays one header line and rectangular rows. A cell that a spreadsheet would run as a formula starts with an apostrophe.',
      tags: ['usage'],
      parameters: usageCsvQuery,
      responses: {
        '200': csvFile('The CSV file.', 'usage-<group_by>-<interval>.csv'),
        '400': ref('InvalidUsageQuery'),
        ...reading,
      },
    },
  },
  '/api/usage.focus.csv': {
    get: {
      operationId: 'getUsageFocusCsv',
      summary: 'Charges of a range in the FinOps FOCUS 1.2 columns, as CSV',
      description:
        'One row per UTC day, provider, model, key and workspace (and value of each tag asked for), written out a few days at a time. FOCUS columns: BilledCost, EffectiveCost, ListCost and ContractedCost (all the known recorded cost in USD: at list price, or at the effective price where pricing.discounts sets a discount, since a record keeps only that one), BillingAccountId/Name and ProviderName, PublisherName, InvoiceIssuerName (the provider), BillingCurrency USD, BillingPeriodStart/End (the UTC month), ChargePeriodStart/End (the UTC day, cut to the range), ChargeCategory Usage, ChargeFrequency Usage-Based, ConsumedQuantity and PricingQuantity (tokens) with unit Tokens, PricingCategory Standard, ResourceId (the gateway key), ServiceCategory AI and Machine Learning, ServiceSubcategory Generative AI, ServiceName and SkuId (the model), SubAccountId/Name (the workspace) and Tags (JSON). Then x_CostStatus (known, lower_bound, unknown, not_counted), x_Requests, the token counts, x_UnpricedRequests, x_NotCountedRequests, x_EstimatedRequests, x_ErrorRequests and one x_tag_<key> column per tag. A row whose cost is unknown has empty cost cells, never 0.',
      tags: ['usage'],
      parameters: [
        ...rangeParams,
        param(
          'tag',
          z.array(z.string()).max(FOCUS_TAGS_MAX),
          `Tag keys to split the rows by, each as an x_tag_<key> column (at most ${FOCUS_TAGS_MAX}, repeated).`,
          { style: 'form', explode: true },
        ),
      ],
      responses: {
        '200': csvFile('The CSV file, CRLF line ends.', 'focus-<first day>-to-<last day>.csv'),
        '400': ref('InvalidUsageQuery'),
        ...reading,
      },
    },
  },
  '/api/usage/series': {
    get: {
      operationId: 'getUsageSeries',
      summary: 'Cost and requests per hour or day for a few groups, "other" and the total (the dashboard chart)',
      description: `Every UTC hour or day from \`from\` to \`to\` is a bucket, empty ones included: at most ${BUCKETS_MAX} buckets.`,
      tags: ['usage'],
      parameters: [
        ...rangeParams,
        groupBy(1),
        intervalParam('Bucket size; default day.'),
        param(
          'value',
          z.array(z.string()).max(SERIES_VALUES_MAX),
          `Values of the group_by dimension to draw (at most ${SERIES_VALUES_MAX}); without any, the 8 most expensive.`,
          {
            style: 'form',
            explode: true,
          },
        ),
      ],
      responses: {
        '200': json(SeriesAnswer, 'One series per value, other and total, bucket by bucket.'),
        '400': ref('InvalidUsageQuery'),
        ...reading,
      },
    },
  },
  '/api/requests': {
    get: {
      operationId: 'listRequests',
      summary: 'Raw request records, newest first, page by page',
      tags: ['usage'],
      parameters: [...rangeParams, ...pageParams('records')],
      responses: { '200': json(RequestsAnswer, 'A page of records.'), '400': ref('InvalidQuery'), ...reading },
    },
  },
  '/api/keys': {
    get: {
      operationId: 'listKeys',
      summary: 'Gateway keys: created through the API or CLI, and declared in the config file',
      tags: ['keys'],
      description: 'The keys of the store, oldest first, then those of the config file.',
      parameters: [param('workspace', z.string(), 'Only the keys of this workspace.'), ...pageParams('keys')],
      responses: {
        '200': json(KeysAnswer, 'A page of the keys, never a key or its hash.'),
        '400': ref('InvalidQuery'),
        ...reading,
      },
    },
    post: {
      operationId: 'createKey',
      summary: 'Create a gateway key',
      description:
        'The answer holds the key, once; only its hash is stored. Every instance sharing the store or the Redis limit store accepts it within a second.',
      tags: ['keys'],
      requestBody: { required: false, content: { 'application/json': { schema: schemaOf(CreateKeyRequest) } } },
      responses: {
        '201': json(CreatedKeyAnswer, 'The new key.'),
        '400': error('The body is not a JSON object, or names an unknown workspace or a bad label', [
          'invalid_body',
          'invalid_json',
        ]),
        '413': error('The body is larger than 64 KiB', ['body_too_large']),
        ...writing,
      },
    },
  },
  '/api/keys/bulk': {
    post: {
      operationId: 'createKeys',
      summary: `Create up to ${BULK_KEYS_MAX} gateway keys at once`,
      description:
        'In one transaction: every key is created, or none when one entry is refused. The answer holds the keys, once; only their hashes are stored.',
      tags: ['keys'],
      requestBody: { required: true, content: { 'application/json': { schema: schemaOf(CreateKeysRequest) } } },
      responses: {
        '201': json(CreatedKeysAnswer, 'The new keys.'),
        '400': error(
          `The body is not a JSON object with 1 to ${BULK_KEYS_MAX} keys, or an entry names an unknown workspace or a bad label`,
          ['invalid_body', 'invalid_json'],
        ),
        '413': error('The body is larger than 512 KiB', ['body_too_large']),
        ...writing,
      },
    },
  },
  '/api/keys/{id}': {
    delete: {
      operationId: 'revokeKey',
      summary: 'Revoke a gateway key created through the API or CLI',
      tags: ['keys'],
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        '200': json(RevokedKeyAnswer, 'Revoked.'),
        '404': error('No active key with this id in the store', ['route_not_found']),
        ...writing,
      },
    },
  },
  '/api/budgets': {
    get: {
      operationId: 'listBudgets',
      summary: 'Every budget with its spend in the current period',
      description: 'In the order of their keys, page by page.',
      tags: ['limits'],
      parameters: pageParams('budgets'),
      responses: {
        '200': json(BudgetsAnswer, 'A page of the budgets (none without the budget plugin).'),
        '400': ref('InvalidQuery'),
        ...guarded,
        '503': error(
          'The limit store (Redis) holding the budgets or the usage store cannot be reached, try again shortly (limits_unavailable or store_unavailable, with Retry-After); or the spend query ran past admin.query_timeout_ms or needed more memory than the reader thread may use',
          ['limits_unavailable', 'store_unavailable', 'query_timeout', 'query_too_large'],
          { 'Retry-After': { ...retryAfter, required: false } },
        ),
      },
    },
    post: budgetCreatePath,
  },
  ...budgetWritePaths,
  ...freezePaths,
  '/api/alerts': {
    get: {
      operationId: 'listAlerts',
      summary: 'The alert history: every alert for every channel, newest first',
      description: "Pending alerts show their attempts and next try; a channel's URL or secret is never shown.",
      tags: ['limits'],
      parameters: pageParams('alerts'),
      responses: { '200': json(AlertsAnswer, 'A page of alerts.'), '400': ref('InvalidQuery'), ...writing },
    },
  },
  '/api/alerts/test': {
    post: {
      operationId: 'testAlert',
      summary: 'Send a test alert to one channel, now',
      description:
        'Outside the outbox: one attempt, answered with its outcome (a receiver that fails answers 200 here, delivered false).',
      tags: ['limits'],
      requestBody: { required: true, content: { 'application/json': { schema: schemaOf(AlertTestRequest) } } },
      responses: {
        '200': json(AlertTestAnswer, 'The test alert and whether the channel took it.'),
        '400': error('The body is not a JSON object, or names no configured channel', ['invalid_body', 'invalid_json']),
        '413': error('The body is larger than 64 KiB', ['body_too_large']),
        ...guarded,
      },
    },
  },
  ...reconciliationPaths,
  ...latencyPaths,
  '/api/dimensions': {
    get: {
      operationId: 'listDimensions',
      summary: 'Built-in dimensions and every tag key in the data',
      tags: ['usage'],
      responses: { '200': json(DimensionsAnswer, 'What group_by and filter[] accept.'), ...reading },
    },
  },
  '/healthz': {
    get: {
      operationId: 'getHealth',
      summary: 'Liveness probe',
      description:
        'Answers 200 while the process serves HTTP. No token; the proxy port answers it too. Never counted, recorded or logged per request.',
      security: [],
      tags: ['probes'],
      responses: { '200': json(HealthAnswer, 'Alive.') },
    },
  },
  '/readyz': {
    get: {
      operationId: 'getReadiness',
      summary: 'Readiness probe',
      description:
        'Answers 503 while the gateway shuts down or a dependency listed in probes.readiness.fail_on is down (by default the Redis limit store when limit_store.on_error is closed), naming the failed checks; 200 otherwise, with status degraded and the down dependencies in `degraded` when the usage store or Redis fails without failing readiness (records queue and spill meanwhile). ' +
        'No token, and nothing of the deployment in the answer (the reason of a failure is in the log). The checks run at most once a second, whatever the probe rate. The proxy port answers it too.',
      security: [],
      tags: ['probes'],
      responses: {
        '200': json(ReadinessAnswer, 'Ready, or degraded.'),
        '503': json(ReadinessAnswer, 'Not ready: `failed` names the checks.'),
      },
    },
  },
  '/metrics': {
    get: {
      operationId: 'getMetrics',
      summary: 'Prometheus metrics',
      description:
        'The Prometheus text format (version 0.0.4). Needs the admin token, or the scrape-only token metrics.token; with metrics.auth: none it needs none. ' +
        'The metrics and their labels are listed in docs/operations.md. Absent (404) when metrics.enabled is false.',
      tags: ['probes'],
      responses: {
        '200': { description: 'The metrics.', content: { 'text/plain': { schema: { type: 'string' } } } },
        '404': error('Metrics are off (metrics.enabled: false)', ['route_not_found']),
        '503': error(
          "A multi-core gateway (server.workers > 1): a worker did not answer the gather of every worker's metrics within 5 s; try again after Retry-After seconds",
          ['metrics_unavailable'],
          { 'Retry-After': retryAfter },
        ),
        ...guarded,
      },
    },
  },
  '/api/info': {
    get: {
      operationId: 'getInfo',
      summary: 'Proxy URL, workspaces, and whether anything was recorded yet',
      tags: ['meta'],
      responses: { '200': json(InfoAnswer, 'About this gateway.'), ...reading },
    },
  },
};

function packageVersion(): string {
  // dist/admin/openapi/document.js -> the package root, as in the npm package and the container image.
  return (JSON.parse(readFileSync(resolve(__dirname, '../../../package.json'), 'utf8')) as { version: string }).version;
}

function build(): Json {
  const { schemas } = z.toJSONSchema(answerSchemas, { uri: (id) => `${COMPONENTS}${id}`, unrepresentable: 'throw' });
  return {
    openapi: '3.1.1',
    info: {
      title: 'Tollgate admin API',
      version: packageVersion(),
      description:
        'Usage, cost, records, keys and budgets of a Tollgate gateway. It listens on its own port (admin.port), never on the proxy port. ' +
        'Every route but this document and the probes (/healthz, /readyz) needs the admin token (admin.token) as `Authorization: Bearer <token>` or `X-Admin-Token`. ' +
        'Money is an exact decimal string in USD (cost_usd) and an integer string in pico-USD (cost_pico), never a float; an unknown cost is null, never 0. ' +
        'Errors have the gateway\'s error shape {"error": {message, type, param, code}}.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    security: [{ bearerToken: [] }, { adminTokenHeader: [] }],
    tags: [
      { name: 'usage', description: 'Usage and cost' },
      { name: 'keys', description: 'Gateway keys' },
      { name: 'limits', description: 'Budgets' },
      { name: 'meta', description: 'This gateway and this document' },
      { name: 'probes', description: 'Health, readiness and metrics, for orchestrators and Prometheus' },
    ],
    paths,
    components: {
      securitySchemes: {
        bearerToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'The admin token (admin.token in gateway.config.yaml).',
        },
        adminTokenHeader: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Admin-Token',
          description: 'The admin token, as a header of its own.',
        },
      },
      schemas: Object.fromEntries(Object.entries(schemas).map(([id, s]) => [id, bare(s as Json)])),
      responses,
    },
  };
}

let document: Json | undefined;

/** The document (built once; the same object on every call, do not modify it). */
export function adminOpenApiDocument(): Json {
  return (document ??= build());
}
