/**
 * The Lua behind RedisLimitStore: one function per LimitStore operation, so that each check and its update run
 * as one atomic step on the Redis server, whatever number of gateway processes call at once. They live in one
 * script, LIMIT_BATCH, which runs a list of operations in order: the store sends every operation issued in one
 * event-loop turn (the checks of all the requests under way) as one call, instead of one script call each.
 *
 * Conventions shared by every operation:
 * - `now` (epoch ms) comes from the caller when given, else from Redis `TIME`, so that all instances read one
 *   clock. An empty string means "not given".
 * - Fractional numbers go back to Node as strings formatted with %.17g (Redis truncates Lua numbers to integers
 *   in replies, and %.17g round-trips a double exactly), and the arithmetic is the same IEEE double arithmetic
 *   as the memory store, so both stores give identical results.
 * - TTLs are relative (PEXPIRE, never PEXPIREAT): a caller-supplied `now` may differ from the Redis clock.
 * - Budget amounts are pico-USD integers kept as decimal strings and computed as two limbs
 *   (whole dollars, pico remainder < 10^12), each an exact integer in a Lua double; see BUDGET_MAX_PICO.
 */
import { BUDGET_LUA, BUDGET_OPS } from './redis-budget-scripts';

/** Clock and number helpers shared by the operations. */
const PRELUDE = `
-- Redis < 5 refuses writes after TIME unless the script replicates its effects; a no-op on Redis 7.
if redis.replicate_commands then redis.replicate_commands() end

-- The Redis clock is read once per batch: its operations happen at one instant, like one script's steps.
local redisNow
local function clock(arg)
  local now = tonumber(arg)
  if now then return now end
  if not redisNow then
    local t = redis.call('TIME')
    redisNow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return redisNow
end

local function num(x) return string.format('%.17g', x) end
local function int(x) return string.format('%.0f', x) end

-- Sets the key's TTL to at least ms: never shortens it, so an instance whose clock lags cannot cut short
-- a key another instance still needs.
local function keep(key, ms)
  ms = math.ceil(ms)
  if ms < 1 then ms = 1 end
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, int(ms)) end
end
`;

/** Extra lifetime of a key past the moment it stops mattering: absorbs clock skew between instances. */
const MARGIN_MS = 60_000;

/** A bucket's tokens at `now`: refilled since its last write, capped at the limit; a missing key is full. */
const REFILLED = `
local function refilled(key, limit, rate, now)
  local rec = redis.call('HMGET', key, 'tokens', 'ts')
  if not rec[1] then return limit end
  return math.min(limit, tonumber(rec[1]) + (now - tonumber(rec[2])) * rate)
end

-- Writes a bucket's tokens; the key expires once the bucket would be full again (+ margin).
local function store(key, tokens, limit, rate, now)
  redis.call('HSET', key, 'tokens', num(tokens), 'ts', num(now))
  redis.call('PEXPIRE', key, int(math.ceil((limit - tokens) / rate) + ${MARGIN_MS}))
end
`;

/**
 * take: KEYS = buckets; ARGV = now, then limit and windowMs per bucket.
 * Hash per bucket {tokens, ts}. A missing key is a full bucket, so the key expires once it would be full again.
 * Returns {allowed 0|1, tokens left per bucket...}; Node derives remaining/reset/retry-after from them.
 */
const TAKE = `
local now = clock(ARGV[1])
local n = #KEYS
local tokens, limits, rates = {}, {}, {}
local allowed = true
for i = 1, n do
  local limit = tonumber(ARGV[2 * i])
  local rate = limit / tonumber(ARGV[2 * i + 1])
  local t = refilled(KEYS[i], limit, rate, now)
  tokens[i], limits[i], rates[i] = t, limit, rate
  if t < 1 then allowed = false end
end
local out = { allowed and 1 or 0 }
for i = 1, n do
  local left = tokens[i]
  if allowed then
    left = left - 1
    store(KEYS[i], left, limits[i], rates[i], now)
  end
  out[#out + 1] = num(left)
end
return out
`;

/** refund: KEYS = buckets; ARGV = now, then limit and windowMs per bucket. One token back to each, capped. */
const REFUND = `
local now = clock(ARGV[1])
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    local limit = tonumber(ARGV[2 * i])
    local rate = limit / tonumber(ARGV[2 * i + 1])
    store(KEYS[i], math.min(limit, refilled(KEYS[i], limit, rate, now) + 1), limit, rate, now)
  end
end
return 0
`;

/**
 * addToWindow / windowTotal: KEYS = window hash; ARGV = now, windowMs[, amount].
 * One hash per limit key, one field per window start: instances whose clocks straddle a window boundary
 * each count in their own window instead of resetting each other's. Fields older than the previous window
 * are dropped; the key expires after the current window ends.
 */
const WINDOW_ADD = `
local now = clock(ARGV[1])
local windowMs = tonumber(ARGV[2])
local start = now - math.fmod(now, windowMs)
local field = num(start)
local total = tonumber(redis.call('HGET', KEYS[1], field) or '0') + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], field, num(total))
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if tonumber(f) < start - windowMs then redis.call('HDEL', KEYS[1], f) end
end
keep(KEYS[1], start + windowMs - now + ${MARGIN_MS})
return num(total)
`;

const WINDOW_TOTAL = `
local now = clock(ARGV[1])
local windowMs = tonumber(ARGV[2])
local start = now - math.fmod(now, windowMs)
return redis.call('HGET', KEYS[1], num(start)) or '0'
`;

/**
 * acquireSlot: KEYS = slot zset (holder -> lease end, epoch ms); ARGV = holder, limit, leaseMs, now.
 * Expired holders (lease end <= now) are dropped first, so a crashed instance's slots free themselves.
 * Re-acquiring as a current holder always succeeds and extends its lease. Returns {acquired 0|1, inUse}.
 */
const SLOT_ACQUIRE = `
local now = clock(ARGV[4])
local holder, limit = ARGV[1], tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', num(now))
local inUse = redis.call('ZCARD', KEYS[1])
if inUse >= limit and not redis.call('ZSCORE', KEYS[1], holder) then return { 0, inUse } end
local leaseEnd = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], num(leaseEnd), holder)
keep(KEYS[1], leaseEnd - now + ${MARGIN_MS})
return { 1, redis.call('ZCARD', KEYS[1]) }
`;

/** renewSlot: KEYS = slot zset; ARGV = holder, leaseMs, now. Only a current holder is renewed. */
const SLOT_RENEW = `
local now = clock(ARGV[3])
local leaseEnd = now + tonumber(ARGV[2])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], num(leaseEnd), ARGV[1])
  keep(KEYS[1], leaseEnd - now + ${MARGIN_MS})
end
return 0
`;

/** releaseSlot: KEYS = slot zset; ARGV = holder. Redis deletes the key with its last member. */
const SLOT_RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
return 0
`;

/**
 * addToSet: KEYS = set; ARGV = member, untilMs (epoch ms). The set is kept until then on the Redis clock, + margin.
 * A sorted set whose members all score 0, so that ZRANGEBYLEX pages it in byte order.
 */
const SET_ADD = `
redis.call('ZADD', KEYS[1], 0, ARGV[1])
keep(KEYS[1], tonumber(ARGV[2]) - clock('') + ${MARGIN_MS})
return 0
`;

/** The operations by name. Each body runs as `function(KEYS, ARGV)`: it reads its keys and arguments as a script would. */
const OPS = {
  take: TAKE,
  refund: REFUND,
  windowAdd: WINDOW_ADD,
  windowTotal: WINDOW_TOTAL,
  slotAcquire: SLOT_ACQUIRE,
  slotRenew: SLOT_RENEW,
  slotRelease: SLOT_RELEASE,
  ...BUDGET_OPS,
  setAdd: SET_ADD,
} as const;

export type LimitOp = keyof typeof OPS;

/**
 * Runs a batch of operations in order. ARGV: the number of operations, then per operation its name, its key
 * count, its argument count and its arguments; KEYS: the operations' keys, in the same order. Each operation runs
 * under pcall, so one that fails (a key of the wrong type, say) fails alone. The reply has one entry per
 * operation: {1, result} or {0, error text}.
 */
export const LIMIT_BATCH = `${PRELUDE}${REFILLED}${BUDGET_LUA}
local ops = {}
${Object.entries(OPS)
  .map(([name, body]) => `ops['${name}'] = function(KEYS, ARGV)${body}end`)
  .join('\n')}

local out = {}
local k, a = 0, 1
for i = 1, tonumber(ARGV[1]) do
  local name, nk, na = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  a = a + 3
  local keys, args = {}, {}
  for j = 1, nk do keys[j] = KEYS[k + j] end
  for j = 1, na do args[j] = ARGV[a + j] end
  k, a = k + nk, a + na
  local op = ops[name]
  if op then
    local ok, res = pcall(op, keys, args)
    if ok then
      out[i] = { 1, res }
    else
      out[i] = { 0, type(res) == 'table' and tostring(res.err) or tostring(res) }
    end
  else
    out[i] = { 0, 'unknown limit operation ' .. tostring(name) }
  end
end
return out
`;
