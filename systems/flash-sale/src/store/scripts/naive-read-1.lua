-- naive-read: FS-03's first step, on its own: read the stock. The naive flow then checks > 0 in the
-- caller and writes with naive-write: a window in which another request reads the same value.
-- KEYS[1] stock hash {available, epoch}
-- returns available (-1 when missing)
local v = redis.call("HGET", KEYS[1], "available")
if not v then return -1 end
return tonumber(v)
