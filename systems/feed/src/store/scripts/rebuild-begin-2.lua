-- rebuild-begin: takes the per-user rebuild lock (FD-19: SET lock:rebuild:{user} NX PX) and,
-- when taken, creates the list with its marker member "0", so fan-out writes made while the
-- rebuild pulls land in it instead of being skipped as "no list" and lost.
-- KEYS[1] the rebuild lock
-- KEYS[2] the user's timeline (zset)
-- ARGV[1] owner token
-- ARGV[2] lock time to live in ms
-- ARGV[3] the list's time to live in ms
-- returns 1 when this owner took the lock, 0 when another holds it
if not redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return 0
end
redis.call("ZADD", KEYS[2], 0, "0")
redis.call("PEXPIRE", KEYS[2], ARGV[3])
return 1
