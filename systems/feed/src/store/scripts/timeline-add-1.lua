-- timeline-add: one fan-out write (FD-16/17). The id goes into a follower's sorted set with
-- the post's time as score; a repeated id only rewrites its score, so a redelivered event
-- duplicates nothing. A missing list is NOT created: it vanished (restart, inactivity) and
-- its next read rebuilds it by pull, which includes this post.
-- KEYS[1] the follower's timeline (zset)
-- ARGV[1] post id (decimal)
-- ARGV[2] score: the post's time in ms
-- ARGV[3] cap: entries kept, the newest
-- returns the list's size after the write, or -1 when there is no list
if redis.call("EXISTS", KEYS[1]) == 0 then
  return -1
end
redis.call("ZADD", KEYS[1], ARGV[2], ARGV[1])
local size = redis.call("ZCARD", KEYS[1])
local cap = tonumber(ARGV[3])
if size > cap then
  redis.call("ZREMRANGEBYRANK", KEYS[1], 0, size - cap - 1)
  size = cap
end
return size
