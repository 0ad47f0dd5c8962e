-- room-status: "serving up to P", the same for everyone (the page polls it, a CDN caches it).
-- KEYS[1] meta hash {open, last, serving, credit, tickMs}
-- KEYS[2] positions hash: entrant -> position
-- KEYS[3] order list: entrant at position p is element p - 1
-- KEYS[4] pre-queue sorted set: entrant scored by its random draw
-- KEYS[5] active sorted set: admitted entrant -> last sign of life (ms)
-- KEYS[6] admitted-at hash: entrant -> ms its slot began
-- KEYS[7] ended set: entrants whose slot ended
-- KEYS[8] secrets hash: entrant -> binding of its secret
-- ARGV[1] opensAtMs
-- ARGV[2] entrants drawn from the pre-queue per call at the opening (room-keys.lua)
-- returns {open 1|0, servingUpTo, lastPosition, active, waiting}
--- @include "server-time-ms"
--- @include "room-keys"
openIfDue(serverTimeMs(), tonumber(ARGV[1]), tonumber(ARGV[2]))
local open = redis.call("HGET", META, "open") == "1" and 1 or 0
local last = tonumber(redis.call("HGET", META, "last") or "0")
local serving = tonumber(redis.call("HGET", META, "serving") or "0")
return {open, serving, last, redis.call("ZCARD", ACTIVE), redis.call("ZCARD", PRE) + math.max(0, last - serving)}
