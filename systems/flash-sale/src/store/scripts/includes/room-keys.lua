-- The waiting room's keys, the same eight in every room script (one hash tag: one slot).
local META, POS, ORDER, PRE, ACTIVE, SINCE, ENDED, SECRETS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

-- The sale opens (at or after opensAtMs): the pre-queue, ordered by the random draw each
-- entrant got at join, takes positions 1..k (Queue-it's randomised start); FIFO after.
local function openIfDue(now, opensAt)
  if redis.call("HGET", META, "open") == "1" or now < opensAt then return end
  local last = tonumber(redis.call("HGET", META, "last") or "0")
  for _, entrant in ipairs(redis.call("ZRANGE", PRE, 0, -1)) do
    last = last + 1
    redis.call("HSET", POS, entrant, last)
    redis.call("RPUSH", ORDER, entrant)
  end
  redis.call("DEL", PRE)
  redis.call("HSET", META, "open", 1, "last", last, "tickMs", now)
end
