-- reserve-stock: FS-04/05 — subtract, decide and undo in one script: nothing runs in between.
-- One call decides one hold or a batch of them (concurrent callers' reservations grouped by
-- the store: one EVALSHA, one TIME, many decisions), each in arrival order, each on its own.
-- KEYS[1] stock hash {available, epoch} of one sale (missing = Redis lost it: STOCK_MISSING)
-- KEYS[2] holds sorted set: holdId scored by the ms it expires (or is rechecked)
-- KEYS[3] hold quantities hash: holdId -> tickets it took
-- ARGV[1..] holdId, quantity (integer >= 1), holdTtlMs (integer >= 1): one triple per hold (at most 1000)
-- returns per hold {reserved 1|0|-1 (hold id taken), available after the subtraction (0 = the last one, -1.. = refused and undone), epoch, expiresAtMs or 0}, flattened
--- @include "server-time-ms"
local n = #ARGV / 3
if n < 1 or n % 1 ~= 0 or n > 1000 then return redis.error_reply("ARG_INVALID holds come as 1..1000 holdId, quantity, holdTtlMs triples") end
for i = 1, #ARGV, 3 do
  local qty, ttl = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if not qty or qty < 1 or qty % 1 ~= 0 then return redis.error_reply("ARG_INVALID quantity must be an integer >= 1") end
  if not ttl or ttl < 1 or ttl % 1 ~= 0 then return redis.error_reply("ARG_INVALID holdTtlMs must be an integer >= 1") end
end
if redis.call("EXISTS", KEYS[1]) == 0 then return redis.error_reply("STOCK_MISSING the sale's stock is not in Redis: recompute it") end
local epoch = tonumber(redis.call("HGET", KEYS[1], "epoch"))
local now = serverTimeMs()
local out = {}
for i = 1, #ARGV, 3 do
  local hold, qty, ttl = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  if redis.call("ZSCORE", KEYS[2], hold) then
    table.insert(out, -1); table.insert(out, 0); table.insert(out, epoch); table.insert(out, 0)
  else
    local after = redis.call("HINCRBY", KEYS[1], "available", -qty)
    if after < 0 then
      -- §8.3: whoever gets a negative value lost the race, and the system undoes its own subtraction.
      redis.call("HINCRBY", KEYS[1], "available", qty)
      table.insert(out, 0); table.insert(out, after); table.insert(out, epoch); table.insert(out, 0)
    else
      redis.call("ZADD", KEYS[2], now + ttl, hold)
      redis.call("HSET", KEYS[3], hold, qty)
      table.insert(out, 1); table.insert(out, after); table.insert(out, epoch); table.insert(out, now + ttl)
    end
  end
end
return out
