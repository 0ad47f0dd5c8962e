-- room-touch: a sign of life from an admitted entrant (any checkout call), or leave: its slot
-- is free at once (bought, or nothing left to buy).
-- KEYS[1] meta hash {open, last, serving, credit, tickMs}
-- KEYS[2] positions hash: entrant -> position
-- KEYS[3] order list: entrant at position p is element p - 1
-- KEYS[4] pre-queue sorted set: entrant scored by its random draw
-- KEYS[5] active sorted set: admitted entrant -> last sign of life (ms)
-- KEYS[6] admitted-at hash: entrant -> ms its slot began
-- KEYS[7] ended set: entrants whose slot ended
-- KEYS[8] secrets hash: entrant -> binding of its secret
-- ARGV[1] entrant
-- ARGV[2] "heartbeat" | "leave"
-- returns 1 when the entrant held a live slot, else 0
--- @include "server-time-ms"
--- @include "room-keys"
local entrant = ARGV[1]
if not redis.call("ZSCORE", ACTIVE, entrant) then return 0 end
if ARGV[2] == "leave" then
  redis.call("ZREM", ACTIVE, entrant); redis.call("HDEL", SINCE, entrant); redis.call("SADD", ENDED, entrant)
else
  redis.call("ZADD", ACTIVE, serverTimeMs(), entrant)
end
return 1
