-- celebrity-add: a new post of an author into their cached list when it is cached (written
-- through at post time and again by the fan-out; ZADD of the same member twice is one entry),
-- and the list's version bumped either way, so a fill racing the post is refused. Past the
-- window the oldest go — the "complete" marker "0" (score 0) first: older posts now exist
-- outside the list.
-- KEYS[1] the author's recent ids cr:{author}
-- KEYS[2] the list's version crv:{author}
-- ARGV[1] post id
-- ARGV[2] score (the post's time, ms)
-- ARGV[3] entries kept (the window)
-- ARGV[4] the version's time to live in ms
-- returns 1 when the list held it, 0 when the list is not cached
redis.call("INCR", KEYS[2])
redis.call("PEXPIRE", KEYS[2], ARGV[4])
if redis.call("EXISTS", KEYS[1]) == 0 then
  return 0
end
redis.call("ZADD", KEYS[1], ARGV[2], ARGV[1])
local size = redis.call("ZCARD", KEYS[1])
local window = tonumber(ARGV[3])
if size > window then
  redis.call("ZREMRANGEBYRANK", KEYS[1], 0, size - window - 1)
end
return 1
