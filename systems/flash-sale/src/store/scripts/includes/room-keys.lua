-- The waiting room's keys, the same eight in every room script (one hash tag: one slot).
local META, POS, ORDER, PRE, ACTIVE, SINCE, ENDED, SECRETS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

-- The sale opens (at or after opensAtMs): the pre-queue, ordered by the random draw each
-- entrant got at join, takes positions 1..k (Queue-it's randomised start); FIFO after.
-- Drawn in chunks: each room script call moves at most `chunk` entrants (the lowest draws
-- left) from the pre-queue to the positions, so no call holds Redis for the whole pre-queue.
-- The chunks are consecutive ranks of one sorted order, so the positions are the ranks of the
-- draws exactly as one call would give them. Positions already given are final (every draw
-- left is higher): admission may serve them while the rest is still being drawn. Whoever joins
-- once the sale is open but the pre-queue is not empty yet goes to its end (late-join score
-- 1 + n, above every draw in [0, 1)), in arrival order: FIFO after the pre-queue, as before.
local function openIfDue(now, opensAt, chunk)
  if redis.call("HGET", META, "open") ~= "1" then
    if now < opensAt then return end
    redis.call("HSET", META, "open", 1, "tickMs", now)
  end
  local drawn = redis.call("ZRANGE", PRE, 0, chunk - 1)
  if #drawn == 0 then return end
  local last = tonumber(redis.call("HGET", META, "last") or "0")
  for _, entrant in ipairs(drawn) do
    last = last + 1
    redis.call("HSET", POS, entrant, last)
    redis.call("RPUSH", ORDER, entrant)
  end
  redis.call("ZREMRANGEBYRANK", PRE, 0, #drawn - 1)
  redis.call("HSET", META, "last", last)
end
