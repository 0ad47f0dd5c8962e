-- due-holds: the holds whose expiry (or recheck) time has passed, oldest first, without a scan.
-- FS-09: the reconciler finds expired holds here, never through keyspace notifications.
-- KEYS[1] holds sorted set
-- ARGV[1] maxBatch (integer 1..10000)
-- returns {serverNowMs, holdId, holdId, ...}
--- @include "server-time-ms"
local max = tonumber(ARGV[1])
if not max or max < 1 or max > 10000 or max % 1 ~= 0 then return redis.error_reply("ARG_INVALID maxBatch must be an integer in 1..10000") end
local now = serverTimeMs()
local due = redis.call("ZRANGEBYSCORE", KEYS[1], "-inf", now, "LIMIT", 0, max)
table.insert(due, 1, now)
return due
