import { z } from 'zod';
import { JSON_BODY_COPIES } from '../core/body-memory';
import { resolveShares, shareOfBuffered } from './buffered-shares';
import type { LockoutOptions } from '../plugin-kit/lockout';
import { pricingConfigSchema } from '../pricing/config';
import { ENDPOINT_KEYS, USAGE_PARSER_NAMES } from '../providers/registry';
import { fromText } from './from-text';
import { refuseWeakSecrets } from './key-strength';
import { budgetPolicySchema, limitStoreSchema, workspaceLimitsSchema } from './limits';
import { READINESS_DEPENDENCIES } from './readiness';
import { alertsSchema } from './alerts';
import { reconcileSchema } from './reconcile';
import { parseStorageUrl } from '../storage/url';

/**
 * Admin-token guessing from one client address (the TCP peer): 10 different wrong tokens within 10 minutes block
 * the address for 15 minutes (429 auth_blocked with Retry-After, even for the right token). The same wrong token
 * repeated (a dashboard tab holding an old token) counts once; a missing token is not counted. YAML: admin.lockout.
 */
export const ADMIN_LOCKOUT_DEFAULTS: LockoutOptions = {
  maxFailures: 10,
  windowMs: 600_000,
  blockMs: 900_000,
  maxAddresses: 10_000,
};

/** Sizes may be given as bytes or with a unit: 512kb, 32mb, 1gb. */
const byteSize = fromText(
  z.union([
    z.number().int().positive(),
    z
      .string()
      .regex(/^\d+(\.\d+)?\s*(b|kb|mb|gb)$/i, 'expected a size such as 32mb or 1048576')
      .transform((s) => {
        const m = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)$/i.exec(s)!;
        const mult = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[m[2].toLowerCase() as 'b'];
        return Math.floor(Number(m[1]) * mult);
      }),
  ]),
);

const ms = fromText(z.number().int().positive());
const port = fromText(z.number().int().min(0).max(65535));

/** Defaults of storage.retention (docs/configuration.md; measured in docs/operations.md). */
export const RETENTION_DEFAULTS = { batchSize: 2000, pauseMs: 100 };
/** Records a monthly budget on two tag keys reads: from the first of the month, whatever day it is. */
const MONTH_BUDGET_RECORD_DAYS = 30;

const timeouts = z.strictObject({
  /** TCP+TLS connect. */
  connect_ms: ms.optional(),
  /** From request sent to response headers (long for non-streamed reasoning models). */
  first_byte_ms: ms.optional(),
  /** Longest silence between two body chunks. */
  idle_ms: ms.optional(),
});

const endpointKey = z.enum(ENDPOINT_KEYS);

const authScheme = z.union([z.enum(['bearer', 'x-api-key', 'none']), z.strictObject({ header: z.string().min(1) })]);

/**
 * providers.<slug>: a built-in provider's overrides, a new provider declared in YAML alone
 * (`type: openai-compatible`, reusing a built-in usage parser), or a provider module written in code
 * (`use:` a path relative to the config file or an npm package name); the other keys override the module's.
 */
const providerEntry = z
  .strictObject({
    /** Set false to turn a built-in provider off. */
    enabled: fromText(z.boolean()).default(true),
    /** For providers declared in YAML: the module to build from. Built-ins need no type. */
    type: z.enum(['openai-compatible']).optional(),
    /** A provider module (defineProvider) by path or npm package name; the YAML key becomes its slug. */
    use: z.string().min(1).optional(),
    display_name: z.string().optional(),
    base_url: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }).optional(),
    /** Replaces the module's model-name prefixes. */
    prefixes: z.array(z.string().min(1)).optional(),
    auth: authScheme.optional(),
    endpoints: z.array(endpointKey).min(1).optional(),
    /** The chat-completions field a max_tokens cap is written to when a request names none (default: the module's, max_tokens in YAML). */
    output_limit_field: z.enum(['max_tokens', 'max_completion_tokens']).optional(),
    /** Which built-in usage parser reads this provider's responses. */
    usage: z.enum(USAGE_PARSER_NAMES).optional(),
    timeouts: timeouts.optional(),
  })
  .refine((p) => !(p.type && p.use), { message: 'give either type or use, not both', path: ['use'] });

const gatewayKeyEntry = z
  .strictObject({
    id: z.string().min(1).max(64),
    label: z.string().optional(),
    /** The key itself, normally as ${ENV}: hashed at load, never kept in memory or written anywhere. */
    key: z.string().optional(),
    /** SHA-256 (hex) of the key, for configs that must not contain the key at all. */
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/i, 'expected 64 hex characters (sha256 of the key)')
      .optional(),
  })
  .refine((k) => !(k.key && k.sha256), { message: 'give either key or sha256, not both' });

const workspace = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (at most 64)'),
  name: z.string().optional(),
  keys: z.array(gatewayKeyEntry).default([]),
  limits: workspaceLimitsSchema.prefault({}),
});

const pluginEntry = z.strictObject({
  /** A built-in plugin name, an npm package name, or a path relative to the config file. */
  use: z.string().min(1),
  options: z.record(z.string(), z.unknown()).optional(),
  enabled: z.boolean().default(true),
});

/** A tag key as the attribution plugin accepts it, and the Prometheus label it becomes (tag_<key>, dots as _). */
const metricTagKey = z.string().regex(/^[a-z0-9_][a-z0-9_.]*$/, 'tag keys are lower-case letters, digits, _ and .');
export const tagLabelName = (key: string): string => `tag_${key.replace(/\./g, '_')}`;

/** Prometheus metrics on the admin listener (GET /metrics): docs/operations.md#metrics. */
const metricsSchema = z
  .strictObject({
    enabled: fromText(z.boolean()).default(true),
    /**
     * Who may scrape: `token` (the default) asks for the admin token or metrics.token like any admin route; `none`
     * serves /metrics without one, for a scraper on a private network that the admin port is reachable from only.
     */
    auth: z.enum(['token', 'none']).default('token'),
    /** A scrape-only token, accepted on /metrics besides the admin token, so Prometheus need not hold the admin token. */
    token: z.string().min(16, 'at least 16 characters').optional(),
    /** Tag keys that become labels (tag_<key>) of the token and cost counters; off by default. */
    tag_keys: z
      .array(metricTagKey)
      .max(8)
      .default([])
      .refine((keys) => new Set(keys.map(tagLabelName)).size === keys.length, {
        message: 'two tag keys give the same label name (dots become _)',
      }),
    /**
     * Values per tag key that earn their own label besides the configured ones: those with the most recorded spend,
     * chosen again every tag_values_refresh_ms. Any other value is counted as "other".
     */
    tag_values_max: fromText(z.number().int().min(1).max(1000)).default(50),
    /** Tag values that always have their own label, by tag key (e.g. { feature: [search, triage] }). */
    tag_values: z.record(metricTagKey, z.array(z.string().min(1).max(256)).max(1000)).default({}),
    /** How often the tag values with the most spend are chosen again. */
    tag_values_refresh_ms: fromText(z.number().int().min(100).max(86_400_000)).default(60_000),
    /** Distinct catalog models per provider; a model beyond them, or without a price, is counted as "other". */
    models_max: fromText(z.number().int().min(1).max(5000)).default(200),
    /** Workspaces with their own `workspace` label; requests of any later one are counted as "other". */
    workspaces_max: fromText(z.number().int().min(1).max(5000)).default(100),
    /** Budgets with their own gauges: those closest to their limit (per-tag budgets may number thousands). */
    budgets_max: fromText(z.number().int().min(1).max(5000)).default(100),
  })
  .superRefine((m, ctx) => {
    for (const key of Object.keys(m.tag_values)) {
      if (!m.tag_keys.includes(key))
        ctx.addIssue({ code: 'custom', path: ['tag_values', key], message: `"${key}" is not one of metrics.tag_keys` });
    }
  });

/**
 * The pipeline when the config lists no plugins. Limit plugins do nothing for workspaces without limits. The
 * order is the one each built-in declares (`order` in its definition), which start-up checks.
 */
export const DEFAULT_PIPELINE = [
  'auth',
  'header-strip',
  'attribution',
  'required-tags',
  'max-tokens',
  'concurrency',
  'rate-limit',
  'budget',
  'usage-recorder',
];

export const gatewayConfigSchema = z
  .strictObject({
    server: z
      .strictObject({
        host: z.string().default('127.0.0.1'),
        port: port.default(8080),
        /** Largest request body accepted (413 above it). */
        body_limit: byteSize.default(32 * 1024 * 1024),
        /** How long a shutdown waits for in-flight requests and streams. */
        shutdown_grace_ms: ms.default(30_000),
        /** Gateway processes sharing the port (node:cluster): 1 = a single process, `auto` = one per CPU core. */
        workers: fromText(z.union([z.number().int().min(1).max(256), z.literal('auto')])).default(1),
        /**
         * The old generation may grow this many percent over what the last full collection left live before V8
         * runs the next one (runtime/memory-policy.ts): bounds peak memory under load; 0 = V8's own factor (up to 4x).
         * While a body of 1 MiB or more is held whole (a spooled upload, an inlined image) the bound is 200% instead.
         */
        heap_growth_percent: fromText(z.number().int().min(0).max(1000)).default(35),
        /**
         * Multipart uploads of this size or more (or sent without a length) are received into a temporary file, not
         * memory (services/upload-spool.ts); false = always in memory.
         */
        upload_spool_from: z.union([z.literal(false), byteSize]).default(1024 * 1024),
        /** Where spooled uploads are written (default: the OS temp dir). Files are unlinked at once and never outlive their request. */
        upload_spool_dir: z.string().min(1).optional(),
        /**
         * Request-body bytes held in memory across the requests in flight (runtime/memory-policy.ts); a body that
         * does not fit is refused with 503 gateway_busy before it is read. A JSON body counts twice (its bytes and
         * its parsed form); spooled and streamed uploads do not count.
         */
        max_buffered_bytes: byteSize.default(512 * 1024 * 1024),
        /**
         * What one workspace's (and one key's) request bodies may hold of max_buffered_bytes, so that one tenant's
         * uploads cannot take the whole bound (config/buffered-shares.ts): a size or a percentage. Workspace: a
         * quarter by default; key: unset, only the workspace's share.
         */
        workspace_buffered_bytes: fromText(shareOfBuffered).optional(),
        key_buffered_bytes: fromText(shareOfBuffered).optional(),
        /**
         * A request body must arrive within body_timeout_ms, plus one second for every body_min_rate bytes received
         * (so a large body sent at least that fast always has time); otherwise 408 body_timeout. 0 = no time-out.
         */
        body_timeout_ms: fromText(z.number().int().min(0)).default(30_000),
        body_min_rate: z.union([fromText(z.literal(0)), byteSize]).default(64 * 1024),
        /**
         * Pipelined requests (sent on a connection before the answer to the one before went out) answered at once,
         * over all connections (runtime/pipelining.ts); the others wait their turn. Other requests never wait.
         */
        pipelined_in_flight: fromText(z.number().int().min(1).max(10_000)).default(2),
      })
      .superRefine((server, ctx) => {
        // Smaller, a JSON body near the body limit could never be taken: its client would retry forever.
        const least = JSON_BODY_COPIES * server.body_limit;
        if (server.max_buffered_bytes < least)
          ctx.addIssue({
            code: 'custom',
            path: ['max_buffered_bytes'],
            message: `must be at least twice server.body_limit (${least} bytes): a JSON body counts twice, its bytes and its parsed form`,
          });
      })
      .transform((server, ctx) => {
        const shares = resolveShares(server, (path, message) =>
          ctx.addIssue({ code: 'custom', path: [path], message }),
        );
        return { ...server, workspace_buffered_bytes: shares.workspace, key_buffered_bytes: shares.key };
      })
      .prefault({}),
    /** The admin API (and later the dashboard): its own listener, never on the proxy port. */
    admin: z
      .strictObject({
        host: z.string().default('127.0.0.1'),
        port: port.default(8081),
        /** Required for the admin listener to start; without it the admin API is off. */
        token: z.string().optional(),
        /** An admin or dashboard query still running after this long is cancelled and answered 503 query_timeout. */
        query_timeout_ms: ms.default(10_000),
        /** Exports of every group (GET /api/usage.csv?limit=all) at once; past it 429 concurrency_limited. */
        exports_max: fromText(z.number().int().min(1).max(64)).default(2),
        /** Admin-token guessing from one client address: after max_failures different wrong tokens within window_ms, blocked for block_ms. */
        lockout: z
          .strictObject({
            enabled: fromText(z.boolean()).default(true),
            max_failures: fromText(z.number().int().min(1)).default(ADMIN_LOCKOUT_DEFAULTS.maxFailures),
            window_ms: ms.default(ADMIN_LOCKOUT_DEFAULTS.windowMs),
            block_ms: ms.default(ADMIN_LOCKOUT_DEFAULTS.blockMs),
          })
          .prefault({}),
      })
      .prefault({}),
    logging: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      })
      .prefault({}),
    /** GET /healthz and /readyz on both ports. */
    probes: z
      .strictObject({
        readiness: z
          .strictObject({
            /**
             * The dependencies whose failure fails /readyz (draining always does). Unset: the limit store when
             * limit_store.on_error is closed (the proxy refuses requests without it), nothing otherwise.
             */
            fail_on: z.array(z.enum(READINESS_DEPENDENCIES)).optional(),
          })
          .prefault({}),
      })
      .prefault({}),
    upstream: z
      .strictObject({
        connect_ms: ms.default(10_000),
        first_byte_ms: ms.default(600_000),
        idle_ms: ms.default(300_000),
        /** Max sockets per upstream origin (one keep-alive pool per origin). */
        connections: fromText(z.number().int().positive()).default(256),
        keep_alive_ms: ms.default(60_000),
      })
      .prefault({}),
    storage: z
      .strictObject({
        /** sqlite:<path> (default, embedded) or postgres://... (shared by several instances). */
        url: z
          .string()
          .default('sqlite:./data/tollgate.db')
          .superRefine((url, ctx) => {
            try {
              parseStorageUrl(url);
            } catch (err) {
              ctx.addIssue({ code: 'custom', message: (err as Error).message });
            }
          }),
        /** PostgreSQL only: the schema holding Tollgate's tables (default: the connection's search_path). */
        schema: z
          .string()
          .regex(/^[a-z_][a-z0-9_]*$/, 'lower-case letters, digits and _')
          .optional(),
        /**
         * A second folder for the usage spill file, used while its own cannot be written (a full or read-only disk);
         * best on another disk. Relative to the config file. Unset: records that no spill file takes wait in memory.
         */
        spill_fallback: z.string().min(1).optional(),
        /** Deletion of old usage records (storage/retention.ts); the rollups, and so every total, are kept. */
        retention: z
          .strictObject({
            /** Keep per-request records this many days (whole UTC days); unset keeps them forever. */
            records_days: fromText(z.number().int().min(1).max(36_500)).optional(),
            /** Rows one DELETE statement removes at the most. */
            batch_size: fromText(z.number().int().min(1).max(100_000)).default(RETENTION_DEFAULTS.batchSize),
            /** Pause between two DELETE statements, ms. */
            pause_ms: fromText(z.number().int().min(0).max(60_000)).default(RETENTION_DEFAULTS.pauseMs),
          })
          .prefault({}),
      })
      .prefault({}),
    /** Price overrides: extra models, changed prices, discounts, a LiteLLM price file (see pricing/config.ts). */
    pricing: pricingConfigSchema.optional(),
    metrics: metricsSchema.prefault({}),
    /** Where limit counters live (memory, or Redis for several instances). */
    limit_store: limitStoreSchema.prefault({}),
    /** How every workspace's budgets treat models without a price. */
    budgets: budgetPolicySchema.prefault({}),
    /** Budget alerts to webhooks and Slack: thresholds and forecasts (docs/alerts.md). */
    alerts: alertsSchema.prefault({}),
    /** Recorded spend checked against the providers' bills (docs/reconciliation.md). */
    reconcile: reconcileSchema,
    providers: z
      .record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'provider slugs are lower-case'), providerEntry)
      .default({}),
    workspaces: z.array(workspace).prefault([{ id: 'default' }]),
    /** Pipeline order. auth and header-strip are always present (added first when not listed). */
    plugins: z.array(pluginEntry).default(DEFAULT_PIPELINE.map((use) => ({ use, enabled: true }))),
    security: z
      .strictObject({
        /** Accept gateway keys and an admin token shorter than 24 characters (tests and demos only). */
        allow_weak_keys: fromText(z.boolean()).default(false),
      })
      .prefault({}),
  })
  .superRefine((c, ctx) => {
    refuseWeakSecrets(c, ctx);
    // A budget on two or more tag keys is read from the per-request records of its whole period when it is first met
    // (no rollup holds two tags and the workspace): a month needs 30 days of records (storage/query/plan.ts).
    const days = c.storage.retention.records_days;
    if (days === undefined || days >= MONTH_BUDGET_RECORD_DAYS) return;
    for (const w of c.workspaces) {
      for (const b of w.limits.budgets) {
        if (b.period !== 'month' || Object.keys(b.tag ?? {}).length < 2) continue;
        ctx.addIssue({
          code: 'custom',
          path: ['storage', 'retention', 'records_days'],
          message: `workspace ${w.id} has a monthly budget on ${Object.keys(b.tag ?? {}).join(' and ')}: it counts from the records of the whole month, so records_days must be at least ${MONTH_BUDGET_RECORD_DAYS}`,
        });
        return;
      }
    }
  });

export type GatewayConfig = z.output<typeof gatewayConfigSchema>;
export type ProviderEntry = z.output<typeof providerEntry>;
export type PluginEntry = z.output<typeof pluginEntry>;
export type WorkspaceEntry = z.output<typeof workspace>;
export type MetricsConfig = z.output<typeof metricsSchema>;
