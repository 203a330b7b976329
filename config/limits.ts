import { z } from 'zod';
import { fromText } from './from-text';

const positiveInt = fromText(z.number().int().positive());
const tagKey = z.string().regex(/^[a-z0-9_][a-z0-9_.]*$/, 'tag keys are lower-case letters, digits, _ and .');
const usd = z
  .union([z.string(), z.number()])
  .transform((v) => String(v))
  .pipe(z.string().regex(/^\d+(\.\d{1,12})?$/, 'a non-negative USD amount such as "50" or "12.5"'));

/** Request-rate, token-rate and concurrency limits; usable for a whole workspace or per tag value. */
const rateLimits = {
  /** Requests per minute (a token bucket: a burst of up to this many, refilled evenly over the minute). */
  requests_per_minute: positiveInt.optional(),
  /** Requests per second: a tighter burst limit on top of the per-minute one. */
  requests_per_second: positiveInt.optional(),
  /**
   * Tokens per minute, counted from recorded usage (input + output + cache) when a request completes and checked
   * at admission: a soft limit, since a request's tokens are known only at its end, the requests already in
   * flight when the minute's total reaches it may overshoot it by their own tokens.
   */
  tokens_per_minute: positiveInt.optional(),
  /** Open streaming responses at once; the slot is freed when the stream ends, errors or is aborted. */
  concurrent_streams: positiveInt.optional(),
};

const share = fromText(z.number().gt(0).max(1));

const budget = z
  .strictObject({
    period: z.enum(['day', 'month']),
    /** The spend limit for the period (UTC days / months), in USD. */
    usd,
    /** Only requests with these tag values count, e.g. { customer_id: acme }. */
    tag: z.record(tagKey, z.string().min(1)).optional(),
    /** A separate budget of this size for every value of this tag, e.g. customer_id. */
    per_tag: tagKey.optional(),
    /** Only requests made with this gateway key (its id, as GET /api/keys lists it) count. */
    key: z.string().min(1).max(200).optional(),
    /** A separate budget of this size for every gateway key of the workspace. */
    per_key: z.boolean().optional(),
    /** With per_tag or per_key: other limits for some values (tag values or key ids), e.g. { acme: 500 }. */
    overrides: z.record(z.string().min(1), usd).optional(),
    /**
     * Shares of the budget at which an alert is sent (alerts.channels), each once per period; one share or a list.
     * The lowest is also logged and flagged in the admin API (alerted).
     */
    alert_at: z
      .union([share, z.array(share).min(1)])
      .transform((v) => [...new Set(Array.isArray(v) ? v : [v])].sort((a, b) => a - b))
      .default([0.5, 0.8, 1]),
    /**
     * block: a request that does not fit is refused (429); alert: a soft budget that never refuses, only alerts;
     * clamp: a request that does not fit has its output-token limit lowered to what the budget has left, when that
     * covers its input and min_output_tokens (refused otherwise).
     */
    action: z.enum(['block', 'alert', 'clamp']).default('block'),
    /** With action clamp: the fewest output tokens a clamped request may be left with (default 256). */
    min_output_tokens: positiveInt.optional(),
  })
  .refine((b) => [b.tag, b.per_tag, b.key, b.per_key].filter(Boolean).length <= 1, {
    message: 'give at most one of tag, per_tag, key and per_key',
  })
  .refine((b) => !b.overrides || b.per_tag || b.per_key, { message: 'overrides need per_tag or per_key' })
  .refine((b) => b.min_output_tokens === undefined || b.action === 'clamp', {
    message: 'min_output_tokens needs action: clamp',
  });

/** A budget as the admin API takes it (POST /api/budgets): the same fields, on a workspace. */
export const runtimeBudgetSchema = budget;

export const workspaceLimitsSchema = z.strictObject({
  /** Upper cap on max_tokens / max_completion_tokens / max_output_tokens; a larger value is refused, never rewritten. */
  max_tokens: positiveInt.optional(),
  /**
   * With max_tokens set, a request that names no output-token field: cap (the provider's own output-limit field is
   * set to max_tokens), reject (400 max_tokens_required) or allow (sent as is, uncapped).
   */
  max_tokens_when_absent: z.enum(['cap', 'reject', 'allow']).default('cap'),
  ...rateLimits,
  /** The same limits for each value of a tag, e.g. { customer_id: { concurrent_streams: 5 } }. */
  per_tag: z.record(tagKey, z.strictObject(rateLimits)).optional(),
  budgets: z.array(budget).default([]),
  /** Tag keys every request must carry. */
  required_tags: z.array(tagKey).default([]),
  /** What to do when a required tag is missing: refuse (400), or record the request under "(untagged)". */
  missing_tags: z.enum(['reject', 'record_untagged']).default('reject'),
});

export const limitStoreSchema = z.strictObject({
  /** Share limits, slots, budgets and key revocation across instances through Redis; in memory when unset. */
  // An empty value (an unset ${TOLLGATE_REDIS_URL:-}) means no Redis.
  redis_url: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .regex(/^rediss?:\/\//, 'expected redis://... or rediss://...')
      .optional(),
  ),
  key_prefix: z.string().default('tollgate:'),
  /** When the limit store cannot be reached: keep serving without limits (open) or refuse with 503 (closed). */
  on_error: z.enum(['open', 'closed']).default('open'),
  /**
   * A stream's slot lease; renewed every third of it while the stream is open, so a crashed instance frees its
   * slots after this. At least 1 s, so that a renewal (every 333 ms at most) always lands before the lease ends.
   */
  slot_lease_ms: fromText(z.number().int().min(1000)).default(120_000),
  /**
   * A request's budget reservation lease, renewed the same way while the request is open: the reservation of an
   * instance that died mid-request (or of a reserve whose reply timed out) lapses after this instead of holding
   * budget until the period ends.
   */
  reservation_lease_ms: fromText(z.number().int().min(1000)).default(120_000),
  /**
   * After a Redis time-out or connection failure the store counts as down for this long: limit checks fail at
   * once under on_error instead of each waiting out its command time-out, and a background ping probes Redis.
   */
  circuit_breaker_ms: fromText(z.number().int().min(100)).default(1000),
});

/** Settings that only say how another limit behaves: each has a default, so every workspace holds them. */
export const LIMIT_MODIFIERS: ReadonlySet<string> = new Set(['missing_tags', 'max_tokens_when_absent']);

export type WorkspaceLimits = z.output<typeof workspaceLimitsSchema>;
export type RateLimits = Pick<WorkspaceLimits, keyof typeof rateLimits>;
export type BudgetConfig = z.output<typeof budget>;
export type LimitStoreConfig = z.output<typeof limitStoreSchema>;

/**
 * budgets: how budgets treat a model without a price (its cost cannot be reserved or known). refuse (default): a
 * request for it is refused wherever a budget applies (403 model_unpriced); allow: it passes, reserving and
 * counting nothing; { price_as: <model> }: it is reserved and counted at that model's price.
 */
export const budgetPolicySchema = z.strictObject({
  unpriced: z.union([z.enum(['refuse', 'allow']), z.strictObject({ price_as: z.string().min(1) })]).default('refuse'),
  /**
   * Input tokens a reservation counts at least for a request that references context the body does not hold
   * (previous_response_id, a conversation, file ids, image URLs, file or web search): a number, or context_window
   * (default: the model's whole context window, the bound that makes such a request unable to overshoot).
   */
  referenced_input_tokens: z.union([z.literal('context_window'), positiveInt]).default('context_window'),
  /**
   * How long a request waits, at the most, for a budget's spend this period to be read from the usage store the first
   * time the budget is used (the read goes on in the background); past it, limit_store.on_error decides.
   */
  spend_read_wait_ms: fromText(z.number().int().min(0).max(60_000)).default(1000),
  /**
   * Budgets (one per per_tag value) kept in memory with their spend; the least recently used idle one is forgotten
   * beyond it and read back from the usage store when next used.
   */
  max_active: fromText(z.number().int().min(1)).default(10_000),
  /**
   * How often each instance reads the budgets managed through the admin API (POST/PATCH/DELETE /api/budgets) from
   * the usage store; a change made on this instance applies at once, on the others within this time.
   */
  runtime_refresh_ms: fromText(z.number().int().min(100).max(600_000)).default(2000),
});

export type BudgetPolicy = z.output<typeof budgetPolicySchema>;
