-- timeline-add-many: one fan-out write into many followers' lists in ONE call (FD-16/17) —
-- timeline-add's steps per key, so Redis runs one script per batch instead of one per list and
-- Node encodes one command instead of hundreds. Only for a standalone Redis (and its replica):
-- the keys lie in any cluster slot. A repeated id only rewrites its score (idempotent); a
-- missing list is NOT created (its next read rebuilds it by pull, this post included).
-- KEYS[1..] a follower's timeline (zset); distinct.
-- ARGV[1] post id (decimal)
-- ARGV[2] score: the post's time in ms
-- ARGV[3] cap: entries kept, the newest
-- returns how many of the lists took the id
local cap = tonumber(ARGV[3])
local written = 0
for i = 1, #KEYS do
  if redis.call("EXISTS", KEYS[i]) == 1 then
    redis.call("ZADD", KEYS[i], ARGV[2], ARGV[1])
    local size = redis.call("ZCARD", KEYS[i])
    if size > cap then
      redis.call("ZREMRANGEBYRANK", KEYS[i], 0, size - cap - 1)
    end
    written = written + 1
  end
end
return written
