-- stock-view: what the sale's stock looks like now, for the status route and /metrics.
-- KEYS[1] stock hash {available, epoch}
-- KEYS[2] holds sorted set
-- returns {available (-1 when missing), epoch (0 when missing), holds counted as taken}
local v = redis.call("HMGET", KEYS[1], "available", "epoch")
if not v[1] then return {-1, 0, redis.call("ZCARD", KEYS[2])} end
return {tonumber(v[1]), tonumber(v[2]), redis.call("ZCARD", KEYS[2])}
