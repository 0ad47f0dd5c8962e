-- room-tick: frees the slots of the silent and the expired, then advances "serving up to P"
-- by what the rate earned since the last tick, within the cap on active entrants. Replicas
-- may all tick: the credit is earned from the stored tickMs, so two ticks never double it.
-- KEYS[1] meta hash {open, last, serving, credit, tickMs}
-- KEYS[2] positions hash: entrant -> position
-- KEYS[3] order list: entrant at position p is element p - 1
-- KEYS[4] pre-queue sorted set: entrant scored by its random draw
-- KEYS[5] active sorted set: admitted entrant -> last sign of life (ms)
-- KEYS[6] admitted-at hash: entrant -> ms its slot began
-- KEYS[7] ended set: entrants whose slot ended
-- KEYS[8] secrets hash: entrant -> binding of its secret
-- ARGV[1] opensAtMs
-- ARGV[2] admitPerS
-- ARGV[3] maxActive
-- ARGV[4] graceMs
-- ARGV[5] sessionMs
-- ARGV[6] entrants drawn from the pre-queue per call at the opening (room-keys.lua)
-- ARGV[7] the most credit kept between ticks (waiting-room.ts creditCap: maxActive, or less)
-- returns {admitted by this tick, servingUpTo}
--- @include "server-time-ms"
--- @include "room-keys"
local now = serverTimeMs()
local rate, maxActive, grace, session = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
-- Positions already drawn are final: admission serves them while the pre-queue is still drawn.
openIfDue(now, tonumber(ARGV[1]), tonumber(ARGV[6]))
if redis.call("HGET", META, "open") ~= "1" then return {0, 0} end
-- Silence past the grace, or the session over: the slot is free (the AWS VWR leak, closed).
local gone = redis.call("ZRANGEBYSCORE", ACTIVE, "-inf", "(" .. (now - grace))
for _, entrant in ipairs(gone) do
  redis.call("ZREM", ACTIVE, entrant); redis.call("HDEL", SINCE, entrant); redis.call("SADD", ENDED, entrant)
end
local since = redis.call("HGETALL", SINCE)
for i = 1, #since, 2 do
  if now - tonumber(since[i + 1]) >= session then
    redis.call("ZREM", ACTIVE, since[i]); redis.call("HDEL", SINCE, since[i]); redis.call("SADD", ENDED, since[i])
  end
end
local last = tonumber(redis.call("HGET", META, "last") or "0")
local serving = tonumber(redis.call("HGET", META, "serving") or "0")
local tickMs = tonumber(redis.call("HGET", META, "tickMs") or now)
local credit = math.min(tonumber(redis.call("HGET", META, "credit") or "0") + math.max(0, now - tickMs) * rate / 1000, tonumber(ARGV[7]))
local batch = math.max(0, math.min(math.floor(credit), maxActive - redis.call("ZCARD", ACTIVE), last - serving))
if batch > 0 then
  for _, entrant in ipairs(redis.call("LRANGE", ORDER, serving, serving + batch - 1)) do
    redis.call("ZADD", ACTIVE, now, entrant); redis.call("HSET", SINCE, entrant, now)
  end
end
redis.call("HSET", META, "credit", tostring(credit - batch), "tickMs", now, "serving", serving + batch)
return {batch, serving + batch}
