-- settle-hold: a paid hold leaves the sorted set for good; its tickets stay taken.
-- KEYS[1] holds sorted set
-- KEYS[2] hold quantities hash
-- ARGV[1] holdId
-- returns 1 when the hold was there, 0 when it was settled or returned already
local removed = redis.call("ZREM", KEYS[1], ARGV[1])
redis.call("HDEL", KEYS[2], ARGV[1])
return removed
