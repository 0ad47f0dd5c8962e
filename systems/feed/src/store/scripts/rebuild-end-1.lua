-- rebuild-end: releases the rebuild lock only if this owner still holds it (FD-19): a
-- rebuild that outlived its lock must not delete the lock of the one that took over.
-- KEYS[1] the rebuild lock
-- ARGV[1] owner token
-- returns 1 when released, 0 when the lock was not this owner's
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
