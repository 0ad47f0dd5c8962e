-- reserve-stock: FS-04/05 — subtract, decide and undo in one script: nothing runs in between.
-- KEYS[1] stock hash {available, epoch} of one sale (missing = Redis lost it: STOCK_MISSING)
-- KEYS[2] holds sorted set: holdId scored by the ms it expires (or is rechecked)
-- KEYS[3] hold quantities hash: holdId -> tickets it took
-- ARGV[1] holdId (new; a repeat is HOLD_EXISTS)
-- ARGV[2] quantity (integer >= 1)
-- ARGV[3] holdTtlMs (integer >= 1)
-- returns {reserved 1|0, available after the subtraction (0 = the last one, -1.. = refused and undone), epoch, expiresAtMs or 0}
--- @include "server-time-ms"
local qty = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
if not qty or qty < 1 or qty % 1 ~= 0 then return redis.error_reply("ARG_INVALID quantity must be an integer >= 1") end
if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply("ARG_INVALID holdTtlMs must be an integer >= 1") end
if redis.call("EXISTS", KEYS[1]) == 0 then return redis.error_reply("STOCK_MISSING the sale's stock is not in Redis: recompute it") end
if redis.call("ZSCORE", KEYS[2], ARGV[1]) then return redis.error_reply("HOLD_EXISTS this hold id is taken") end
local epoch = tonumber(redis.call("HGET", KEYS[1], "epoch"))
local after = redis.call("HINCRBY", KEYS[1], "available", -qty)
if after < 0 then
  -- §8.3: whoever gets a negative value lost the race, and the system undoes its own subtraction.
  redis.call("HINCRBY", KEYS[1], "available", qty)
  return {0, after, epoch, 0}
end
local expiresAt = serverTimeMs() + ttl
redis.call("ZADD", KEYS[2], expiresAt, ARGV[1])
redis.call("HSET", KEYS[3], ARGV[1], qty)
return {1, after, epoch, expiresAt}
