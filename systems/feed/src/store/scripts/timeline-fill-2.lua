-- timeline-fill: writes a rebuild's pulled ids into the list (FD-19), fenced by the lock's
-- owner: a rebuild whose lock expired writes nothing (another one owns the list now). Merged
-- with ZADD, so ids pushed during the pull stay; trimmed to the cap.
-- KEYS[1] the user's timeline (zset)
-- KEYS[2] the rebuild lock
-- ARGV[1] owner token
-- ARGV[2] cap
-- ARGV[3] the list's time to live in ms
-- ARGV[4] the ids, "score:id,score:id,…" (possibly empty)
-- returns the list's size, or -1 when the lock is not this owner's
if redis.call("GET", KEYS[2]) ~= ARGV[1] then
  return -1
end
for score, id in string.gmatch(ARGV[4], "(%d+):(%d+)") do
  redis.call("ZADD", KEYS[1], score, id)
end
redis.call("ZADD", KEYS[1], 0, "0")
local size = redis.call("ZCARD", KEYS[1])
local cap = tonumber(ARGV[2])
if size > cap then
  redis.call("ZREMRANGEBYRANK", KEYS[1], 0, size - cap - 1)
  size = cap
end
redis.call("PEXPIRE", KEYS[1], ARGV[3])
return size
