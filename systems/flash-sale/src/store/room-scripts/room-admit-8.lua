-- room-admit: the entrant asks for its turn (a sign of life when admitted): admitted, or
-- where it stands and how long that is at the configured rate (FS-20).
-- KEYS[1] meta hash {open, last, serving, credit, tickMs}
-- KEYS[2] positions hash: entrant -> position
-- KEYS[3] order list: entrant at position p is element p - 1
-- KEYS[4] pre-queue sorted set: entrant scored by its random draw
-- KEYS[5] active sorted set: admitted entrant -> last sign of life (ms)
-- KEYS[6] admitted-at hash: entrant -> ms its slot began
-- KEYS[7] ended set: entrants whose slot ended
-- KEYS[8] secrets hash: entrant -> binding of its secret
-- ARGV[1] entrant
-- ARGV[2] opensAtMs
-- ARGV[3] admitPerS
-- ARGV[4] sessionMs
-- ARGV[5] binding of the secret the entrant sent (checked against the one kept at join)
-- ARGV[6] entrants drawn from the pre-queue per call at the opening (room-keys.lua)
-- returns {1 admitted, position, sessionEndsAtMs} | {2 waiting, position, ahead, estimatedWaitMs} | {3 pre-queue, waiting} | {4 expired} | {5 wrong secret} | {0 unknown}
--- @include "server-time-ms"
--- @include "room-keys"
local entrant, now = ARGV[1], serverTimeMs()
openIfDue(now, tonumber(ARGV[2]), tonumber(ARGV[6]))
local queued = redis.call("ZSCORE", PRE, entrant)
local position = tonumber(redis.call("HGET", POS, entrant))
if not queued and not position then return {0} end
if redis.call("HGET", SECRETS, entrant) ~= ARGV[5] then return {5} end
if queued then return {3, redis.call("ZCARD", PRE)} end
if redis.call("SISMEMBER", ENDED, entrant) == 1 then return {4} end
local since = redis.call("HGET", SINCE, entrant)
if since then
  redis.call("ZADD", ACTIVE, now, entrant)
  return {1, position, tonumber(since) + tonumber(ARGV[4])}
end
local serving = tonumber(redis.call("HGET", META, "serving") or "0")
local ahead = math.max(0, position - serving)
return {2, position, math.max(0, ahead - 1), math.ceil(ahead / tonumber(ARGV[3]) * 1000)}
