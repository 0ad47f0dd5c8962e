-- restore-stock: writes a sale's stock computed from PostgreSQL (creation, or FS-11 after Redis lost it).
-- An older epoch never overwrites a newer one, so a slow recompute cannot undo a later one.
-- KEYS[1] stock hash {available, epoch}
-- KEYS[2] holds sorted set (replaced)
-- KEYS[3] hold quantities hash (replaced)
-- ARGV[1] epoch (integer >= 1)
-- ARGV[2] available (integer >= 0)
-- ARGV[3] recheckMs: when the carried holds are looked at next (integer >= 1)
-- ARGV[4..] holdId, quantity pairs of the holds still counted as taken (charging ones)
-- returns 1 when written, 0 when a newer epoch is there
--- @include "server-time-ms"
local epoch, available, recheck = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if not epoch or epoch < 1 or epoch % 1 ~= 0 then return redis.error_reply("ARG_INVALID epoch must be an integer >= 1") end
if not available or available < 0 or available % 1 ~= 0 then return redis.error_reply("ARG_INVALID available must be an integer >= 0") end
if not recheck or recheck < 1 or recheck % 1 ~= 0 then return redis.error_reply("ARG_INVALID recheckMs must be an integer >= 1") end
if #ARGV % 2 ~= 1 then return redis.error_reply("ARG_INVALID holds come as holdId, quantity pairs") end
local stored = tonumber(redis.call("HGET", KEYS[1], "epoch"))
if stored and stored > epoch then return 0 end
redis.call("DEL", KEYS[2], KEYS[3])
redis.call("HSET", KEYS[1], "available", available, "epoch", epoch)
local at = serverTimeMs() + recheck
for i = 4, #ARGV, 2 do
  redis.call("ZADD", KEYS[2], at, ARGV[i])
  redis.call("HSET", KEYS[3], ARGV[i], ARGV[i + 1])
end
return 1
