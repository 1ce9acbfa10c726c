package budget

import "github.com/redis/go-redis/v9"

// Each account has three keys (KEYS[3i-2..3i]): a hash with what was spent
// (fields u: micro-dollars, t: tokens); a hash of the live reservations
// (id -> "micros:tokens"); a sorted set of their expiry times (ms).
//
// luaHeld drops the expired reservations of an account and returns what the
// others hold. luaOver is the one rule of a limit, shared by Check and
// Reserve: an account with a limit is over when what is spent and held
// already reaches it, or when the amount asked for would pass it.
const luaHeld = `
local function held(r, x, now)
  local dead = redis.call('ZRANGEBYSCORE', x, '-inf', now)
  for _, id in ipairs(dead) do redis.call('HDEL', r, id) end
  if #dead > 0 then redis.call('ZREMRANGEBYSCORE', x, '-inf', now) end
  local hu, ht = 0, 0
  for _, v in ipairs(redis.call('HVALS', r)) do
    local u, t = string.match(v, '^(%d+):(%d+)$')
    hu, ht = hu + tonumber(u), ht + tonumber(t)
  end
  return hu, ht
end
local function spent(b)
  local s = redis.call('HMGET', b, 'u', 't')
  return tonumber(s[1]) or 0, tonumber(s[2]) or 0
end
local function over(limit, used, ask)
  return limit > 0 and (used >= limit or used + ask > limit)
end
`

// reserveScript reserves an estimate in every account, or in none.
// ARGV: now (ms), reservation expiry (ms), reservation id, estimate micros,
// estimate tokens, then per account: limit micros, limit tokens, key TTL (s).
// It returns {0} when reserved, else {account index, unit (1 USD, 2
// tokens), spent, held} of the first account over its limit.
var reserveScript = redis.NewScript(luaHeld + `
local now, expires, id = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local eu, et = tonumber(ARGV[4]), tonumber(ARGV[5])
local n = #KEYS / 3
for i = 1, n do
  local b, r, x = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
  local lu, lt = tonumber(ARGV[3+3*i]), tonumber(ARGV[4+3*i])
  local su, st = spent(b)
  local hu, ht = held(r, x, now)
  if over(lu, su + hu, eu) then return {i, 1, su, hu} end
  if over(lt, st + ht, et) then return {i, 2, st, ht} end
end
for i = 1, n do
  local b, r, x = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
  local ttl = ARGV[5+3*i]
  redis.call('HSET', r, id, eu .. ':' .. et)
  redis.call('ZADD', x, expires, id)
  redis.call('EXPIRE', r, ttl)
  redis.call('EXPIRE', x, ttl)
end
return {0}
`)

// settleScript releases a reservation in every account and charges the
// actual amount, once: the last key marks the reservation settled, so a
// retried Settle whose first reply was lost charges nothing. ARGV: now (ms),
// reservation id, actual micros, actual tokens, the marker's TTL (s), then
// per account the key TTL (s). It returns 1 when the reservation was still
// live in every account, 0 when it had expired in some (the amount is
// charged all the same), 2 when it was settled before.
var settleScript = redis.NewScript(`
local now, id, au, at = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]
if not redis.call('SET', KEYS[#KEYS], '1', 'NX', 'EX', ARGV[5]) then return 2 end
local live = 1
for i = 1, (#KEYS - 1) / 3 do
  local b, r, x = KEYS[3*i-2], KEYS[3*i-1], KEYS[3*i]
  local expires = tonumber(redis.call('ZSCORE', x, id))
  if not expires or expires <= now then live = 0 end
  redis.call('HDEL', r, id)
  redis.call('ZREM', x, id)
  redis.call('HINCRBY', b, 'u', au)
  redis.call('HINCRBY', b, 't', at)
  redis.call('EXPIRE', b, ARGV[5+i])
end
return live
`)

// stateScript drops expired reservations and returns, per account, what
// was spent and what is held: {micros, tokens, held micros, held tokens}...
// ARGV: now (ms).
var stateScript = redis.NewScript(luaHeld + `
local now = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS / 3 do
  local su, st = spent(KEYS[3*i-2])
  local hu, ht = held(KEYS[3*i-1], KEYS[3*i], now)
  out[#out+1] = su; out[#out+1] = st; out[#out+1] = hu; out[#out+1] = ht
end
return out
`)
