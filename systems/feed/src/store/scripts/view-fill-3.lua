-- view-fill: caches a reader's view read from the database after a miss, only if neither the
-- reader's graph (the version) nor the tier membership (the epoch) changed since the miss:
-- a follow, unfollow or mute committed during the read is never hidden by it.
-- KEYS[1] the reader's view rv:{user}
-- KEYS[2] the view's version rvv:{user}
-- KEYS[3] the epoch rv:epoch
-- ARGV[1] the version the miss saw
-- ARGV[2] the epoch the miss saw
-- ARGV[3] the view, "epoch|line|pulled,…|hidden,…"
-- ARGV[4] the view's time to live in ms
-- returns 1 when filled, 0 when refused
if (redis.call("GET", KEYS[2]) or "0") ~= ARGV[1] or (redis.call("GET", KEYS[3]) or "0") ~= ARGV[2] then
  return 0
end
redis.call("SET", KEYS[1], ARGV[3], "PX", ARGV[4])
return 1
