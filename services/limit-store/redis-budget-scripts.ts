/**
 * The budget operations of the Redis limit store (run inside LIMIT_BATCH, after the prelude of redis-scripts.ts):
 * two-limb pico-USD arithmetic, the per-period budget hash with its reservation leases, and the operations on it.
 */

/** Two-limb arithmetic on non-negative pico-USD integers: value = hi * 10^12 + lo, 0 <= lo < 10^12. */
export const BUDGET_LUA = `
local BASE = 1000000000000

local function parse(s)
  local n = #s
  if n <= 12 then return { 0, tonumber(s) } end
  return { tonumber(string.sub(s, 1, n - 12)), tonumber(string.sub(s, n - 11)) }
end

local function fmt(v)
  if v[1] == 0 then return string.format('%.0f', v[2]) end
  return string.format('%.0f%012.0f', v[1], v[2])
end

local function add(a, b)
  local hi, lo = a[1] + b[1], a[2] + b[2]
  if lo >= BASE then hi, lo = hi + 1, lo - BASE end
  return { hi, lo }
end

local function le(a, b)
  if a[1] ~= b[1] then return a[1] < b[1] end
  return a[2] <= b[2]
end

-- a - b, or 0 when b >= a (a reservation is never released below zero)
local function sub0(a, b)
  if le(a, b) then return { 0, 0 } end
  local hi, lo = a[1] - b[1], a[2] - b[2]
  if lo < 0 then hi, lo = hi - 1, lo + BASE end
  return { hi, lo }
end

-- A budget is two keys per period (the period end is part of their names): a hash {spent, reserved,
-- r:<holder> = amount}, where reserved is the sum of the r: fields, and a sorted set holder -> lease end.
-- spent is seeded from the usage store only when the hash does not exist yet; a seed still 'pending' creates it
-- at 0 with the field unseeded, for budgetSeed to add the seed once read. Both expire a day after the
-- period ends (at least 1 min, so a late call on an ended period still works), counted on the Redis clock.
-- Reservations whose lease ended are dropped first: their request's settlement is never coming.
local function budget(key, leases, seed, periodEnd, now)
  if redis.call('EXISTS', key) == 0 then
    if seed == 'pending' then
      redis.call('HSET', key, 'spent', '0', 'reserved', '0', 'unseeded', '1')
    else
      redis.call('HSET', key, 'spent', seed, 'reserved', '0')
    end
  end
  local ttl = tonumber(periodEnd) + 86400000 - now
  if ttl < 60000 then ttl = 60000 end
  redis.call('PEXPIRE', key, string.format('%.0f', ttl))
  local rec = redis.call('HMGET', key, 'spent', 'reserved')
  local spent, reserved = parse(rec[1]), parse(rec[2])
  local lapsed = redis.call('ZRANGEBYSCORE', leases, '-inf', num(now))
  if #lapsed > 0 then
    for _, holder in ipairs(lapsed) do
      local amount = redis.call('HGET', key, 'r:' .. holder)
      if amount then
        reserved = sub0(reserved, parse(amount))
        redis.call('HDEL', key, 'r:' .. holder)
      end
    end
    redis.call('ZREMRANGEBYSCORE', leases, '-inf', num(now))
    redis.call('HSET', key, 'reserved', fmt(reserved))
  end
  return spent, reserved, ttl
end

-- Drops holder's reservation, if it still has one; returns reserved after.
local function release(key, leases, holder, reserved)
  local amount = redis.call('HGET', key, 'r:' .. holder)
  if not amount then return reserved end
  redis.call('HDEL', key, 'r:' .. holder)
  redis.call('ZREM', leases, holder)
  return sub0(reserved, parse(amount))
end
`;

/**
 * reserve: KEYS = hash and lease set per budget; ARGV = holder, amount, leaseMs, then limit, seed, periodEnd
 * per budget. Reserves on every budget or none (an amount of 0 only checks). Returns {allowed 0|1, spent1,
 * reserved1, spent2, reserved2, ...}.
 */
const BUDGET_RESERVE = `
local now = clock('')
local holder, amount, leaseEnd = ARGV[1], parse(ARGV[2]), now + tonumber(ARGV[3])
local n = #KEYS / 2
local spent, reserved, ttls = {}, {}, {}
local allowed = true
for i = 1, n do
  local base = 3 + 3 * (i - 1)
  spent[i], reserved[i], ttls[i] = budget(KEYS[2 * i - 1], KEYS[2 * i], ARGV[base + 2], ARGV[base + 3], now)
  if not le(add(add(spent[i], reserved[i]), amount), parse(ARGV[base + 1])) then allowed = false end
end
local out = { allowed and 1 or 0 }
for i = 1, n do
  if allowed and ARGV[2] ~= '0' then
    local key, leases = KEYS[2 * i - 1], KEYS[2 * i]
    reserved[i] = add(release(key, leases, holder, reserved[i]), amount)
    redis.call('HSET', key, 'reserved', fmt(reserved[i]), 'r:' .. holder, ARGV[2])
    redis.call('ZADD', leases, num(leaseEnd), holder)
    redis.call('PEXPIRE', leases, string.format('%.0f', ttls[i]))
  end
  out[#out + 1] = fmt(spent[i])
  out[#out + 1] = fmt(reserved[i])
end
return out
`;

/** renewReservation: KEYS = lease sets; ARGV = holder, leaseMs. Only a live holder is renewed (ZADD XX). */
const BUDGET_RENEW = `
local leaseEnd = clock('') + tonumber(ARGV[2])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', num(leaseEnd), ARGV[1])
end
return 0
`;

/**
 * settle: KEYS = hash and lease set per budget; ARGV = holder, actual, then seed, periodEnd per budget.
 * Drops the holder's reservation (if any: settling twice releases once) and adds the actual cost to spent,
 * on every budget; returns spent and reserved after, per budget.
 */
const BUDGET_SETTLE = `
local now = clock('')
local holder, actual = ARGV[1], parse(ARGV[2])
local out = {}
for i = 1, #KEYS / 2 do
  local key, leases = KEYS[2 * i - 1], KEYS[2 * i]
  local base = 3 + 2 * (i - 1)
  local spent, reserved = budget(key, leases, ARGV[base], ARGV[base + 1], now)
  local s, r = fmt(add(spent, actual)), fmt(release(key, leases, holder, reserved))
  redis.call('HSET', key, 'spent', s, 'reserved', r)
  out[#out + 1] = s
  out[#out + 1] = r
end
return out
`;

/**
 * budgetStates: KEYS = hash and lease set per budget; ARGV = seed, periodEnd per budget. Creates nothing: a budget not in
 * Redis yet reports its seed and nothing reserved. Returns spent and reserved per budget.
 */
const BUDGET_STATES = `
local now = clock('')
local out = {}
for i = 1, #KEYS / 2 do
  local key, leases = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('EXISTS', key) == 0 then
    out[#out + 1] = ARGV[2 * i - 1]
    out[#out + 1] = '0'
  else
    local spent, reserved = budget(key, leases, '0', ARGV[2 * i], now)
    out[#out + 1] = fmt(spent)
    out[#out + 1] = fmt(reserved)
  end
end
return out
`;

/**
 * budgetSeed: KEYS = hash; ARGV = seed. Adds the seed to a budget created while it was pending (field unseeded),
 * once; any other budget is left alone.
 */
const BUDGET_SEED = `
if redis.call('HEXISTS', KEYS[1], 'unseeded') == 1 then
  local spent = parse(redis.call('HGET', KEYS[1], 'spent'))
  redis.call('HSET', KEYS[1], 'spent', fmt(add(spent, parse(ARGV[1]))))
  redis.call('HDEL', KEYS[1], 'unseeded')
end
return 0
`;

/**
 * raiseSpend: KEYS = hash and lease set; ARGV = spent, periodEnd. spent becomes at least the given amount (a
 * missing budget is created with it); it is read from the usage store's records, which hold any pending seed too,
 * so the unseeded mark is cleared. Returns {spent, reserved}.
 */
const BUDGET_RAISE = `
local spent, reserved = budget(KEYS[1], KEYS[2], ARGV[1], ARGV[2], clock(''))
local floor = parse(ARGV[1])
if not le(floor, spent) then spent = floor end
redis.call('HSET', KEYS[1], 'spent', fmt(spent))
redis.call('HDEL', KEYS[1], 'unseeded')
return { fmt(spent), fmt(reserved) }
`;

/** The budget operations by name (merged into the store's operations). */
export const BUDGET_OPS = {
  budgetReserve: BUDGET_RESERVE,
  budgetRenew: BUDGET_RENEW,
  budgetSettle: BUDGET_SETTLE,
  budgetStates: BUDGET_STATES,
  budgetSeed: BUDGET_SEED,
  budgetRaise: BUDGET_RAISE,
} as const;
