import { z } from 'zod';
import { ADMIN_LOCKOUT_DEFAULTS } from '../plugins/auth/lockout';
import { pricingConfigSchema } from '../pricing/config';
import { ENDPOINT_KEYS, USAGE_PARSER_NAMES } from '../providers/registry';
import { fromText } from './from-text';
import { limitStoreSchema, workspaceLimitsSchema } from './limits';


/** Sizes may be given as bytes or with a unit: 512kb, 32mb, 1gb. */
const byteSize = fromText(z.union([
  z.number().int().positive(),
  z
    .string()
    .regex(/^\d+(\.\d+)?\s*(b|kb|mb|gb)$/i, 'expected a size such as 32mb or 1048576')
    .transform((s) => {
      const m = /^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)$/i.exec(s)!;
      const mult = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[m[2].toLowerCase() as 'b'];
      return Math.floor(Number(m[1]) * mult);
    }),
]));

const ms = fromText(z.number().int().positive());
const port = fromText(z.number().int().min(0).max(65535));

const timeouts = z.strictObject({
  /** TCP+TLS connect. */
  connect_ms: ms.optional(),
  /** From request sent to response headers (long for non-streamed reasoning models). */
  first_byte_ms: ms.optional(),
  /** Longest silence between two body chunks. */
  idle_ms: ms.optional(),
});

const endpointKey = z.enum(ENDPOINT_KEYS);

const authScheme = z.union([
  z.enum(['bearer', 'x-api-key', 'none']),
  z.strictObject({ header: z.string().min(1) }),
]);

/**
 * providers.<slug>: a built-in provider's overrides, a new provider declared in YAML alone
 * (`type: openai-compatible`, reusing a built-in usage parser), or a provider module written in code
 * (`use:` a path relative to the config file or an npm package name); the other keys override the module's.
 */
const providerEntry = z.strictObject({
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
  /** Which built-in usage parser reads this provider's responses. */
  usage: z.enum(USAGE_PARSER_NAMES).optional(),
  timeouts: timeouts.optional(),
}).refine((p) => !(p.type && p.use), { message: 'give either type or use, not both', path: ['use'] });

const gatewayKeyEntry = z
  .strictObject({
    id: z.string().min(1).max(64),
    label: z.string().optional(),
    /** The key itself, normally as ${ENV}: hashed at load, never kept in memory or written anywhere. */
    key: z.string().optional(),
    /** SHA-256 (hex) of the key, for configs that must not contain the key at all. */
    sha256: z.string().regex(/^[0-9a-f]{64}$/i, 'expected 64 hex characters (sha256 of the key)').optional(),
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

/** The pipeline when the config lists no plugins. Limit plugins do nothing for workspaces without limits. */
export const DEFAULT_PIPELINE = ['auth', 'header-strip', 'attribution', 'required-tags', 'max-tokens', 'rate-limit', 'concurrency', 'budget', 'usage-recorder'];

export const gatewayConfigSchema = z.strictObject({
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
       * memory (core/upload-spool.ts); false = always in memory.
       */
      upload_spool_from: z.union([z.literal(false), byteSize]).default(1024 * 1024),
      /** Where spooled uploads are written (default: the OS temp dir). Files are unlinked at once and never outlive their request. */
      upload_spool_dir: z.string().min(1).optional(),
    })
    .prefault({}),
  /** The admin API (and later the dashboard): its own listener, never on the proxy port. */
  admin: z
    .strictObject({
      host: z.string().default('127.0.0.1'),
      port: port.default(8081),
      /** Required for the admin listener to start; without it the admin API is off. */
      token: z.string().optional(),
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
      url: z.string().default('sqlite:./data/tollgate.db'),
      /** PostgreSQL only: the schema holding Tollgate's tables (default: the connection's search_path). */
      schema: z.string().regex(/^[a-z_][a-z0-9_]*$/, 'lower-case letters, digits and _').optional(),
    })
    .prefault({}),
  /** Price overrides: extra models, changed prices, discounts, a LiteLLM price file (see pricing/config.ts). */
  pricing: pricingConfigSchema.optional(),
  /** Where limit counters live (memory, or Redis for several instances). */
  limit_store: limitStoreSchema.prefault({}),
  providers: z.record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'provider slugs are lower-case'), providerEntry).default({}),
  workspaces: z.array(workspace).prefault([{ id: 'default' }]),
  /** Pipeline order. auth and header-strip are always present (added first when not listed). */
  plugins: z
    .array(pluginEntry)
    .default(DEFAULT_PIPELINE.map((use) => ({ use, enabled: true }))),
});

export type GatewayConfig = z.output<typeof gatewayConfigSchema>;
export type ProviderEntry = z.output<typeof providerEntry>;
export type PluginEntry = z.output<typeof pluginEntry>;
export type WorkspaceEntry = z.output<typeof workspace>;
