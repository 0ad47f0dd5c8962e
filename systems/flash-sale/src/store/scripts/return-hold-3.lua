-- return-hold: gives a released hold's tickets back to the stock, at most once per hold.
-- The hold's membership in the sorted set is the gate: only the call that removes it adds back,
-- so a reconciler round and a decline racing on one hold return its stock once.
-- KEYS[1] stock hash {available, epoch}
-- KEYS[2] holds sorted set
-- KEYS[3] hold quantities hash
-- ARGV[1] holdId
-- returns {returned 1|0, available after (-1 when the stock is missing)}
if redis.call("ZREM", KEYS[2], ARGV[1]) == 0 then
  local available = redis.call("HGET", KEYS[1], "available")
  return {0, available and tonumber(available) or -1}
end
local qty = tonumber(redis.call("HGET", KEYS[3], ARGV[1])) or 0
redis.call("HDEL", KEYS[3], ARGV[1])
if redis.call("EXISTS", KEYS[1]) == 0 then return {0, -1} end
return {1, redis.call("HINCRBY", KEYS[1], "available", qty)}
