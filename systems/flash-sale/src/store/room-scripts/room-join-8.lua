-- room-join: one position per user (FS-13): a second join answers the first one's place.
-- KEYS[1] meta hash {open, last, serving, credit, tickMs}
-- KEYS[2] positions hash: entrant -> position
-- KEYS[3] order list: entrant at position p is element p - 1
-- KEYS[4] pre-queue sorted set: entrant scored by its random draw
-- KEYS[5] active sorted set: admitted entrant -> last sign of life (ms)
-- KEYS[6] admitted-at hash: entrant -> ms its slot began
-- KEYS[7] ended set: entrants whose slot ended
-- KEYS[8] secrets hash: entrant -> binding of its secret
-- ARGV[1] entrant
-- ARGV[2] binding of the secret this join would give (kept only on the first join)
-- ARGV[3] random draw in [0, 1) (the pre-queue's order at the opening)
-- ARGV[4] opensAtMs
-- ARGV[5] maxEntrants
-- ARGV[6] entrants drawn from the pre-queue per call at the opening (room-keys.lua)
-- returns {kind 1 queued|2 pre-queue|0 full, position or waiting, enrolled 1|0}
--- @include "server-time-ms"
--- @include "room-keys"
local entrant, opensAt, max = ARGV[1], tonumber(ARGV[4]), tonumber(ARGV[5])
openIfDue(serverTimeMs(), opensAt, tonumber(ARGV[6]))
local position = redis.call("HGET", POS, entrant)
if position then return {1, tonumber(position), 0} end
if redis.call("ZSCORE", PRE, entrant) then return {2, redis.call("ZCARD", PRE), 0} end
if redis.call("HLEN", POS) + redis.call("ZCARD", PRE) >= max then return {0, 0, 0} end
local enrolled = redis.call("HSETNX", SECRETS, entrant, ARGV[2])
if redis.call("HGET", META, "open") ~= "1" then
  redis.call("ZADD", PRE, ARGV[3], entrant)
  return {2, redis.call("ZCARD", PRE), enrolled}
end
-- Open, the pre-queue still being drawn: this entrant goes after all of it, in arrival order.
if redis.call("EXISTS", PRE) == 1 then
  redis.call("ZADD", PRE, 1 + redis.call("HINCRBY", META, "late", 1), entrant)
  return {2, redis.call("ZCARD", PRE), enrolled}
end
local last = redis.call("HINCRBY", META, "last", 1)
redis.call("HSET", POS, entrant, last)
redis.call("RPUSH", ORDER, entrant)
return {1, last, enrolled}
