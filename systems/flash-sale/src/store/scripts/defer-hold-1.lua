-- defer-hold: moves a hold's next look forward (a charging hold is frozen: rechecked, never returned).
-- KEYS[1] holds sorted set
-- ARGV[1] holdId
-- ARGV[2] delayMs (integer >= 1)
-- returns 1 when the hold was there and moved, 0 when it is gone
--- @include "server-time-ms"
local delay = tonumber(ARGV[2])
if not delay or delay < 1 or delay % 1 ~= 0 then return redis.error_reply("ARG_INVALID delayMs must be an integer >= 1") end
if not redis.call("ZSCORE", KEYS[1], ARGV[1]) then return 0 end
redis.call("ZADD", KEYS[1], serverTimeMs() + delay, ARGV[1])
return 1
