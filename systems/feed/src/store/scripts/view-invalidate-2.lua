-- view-invalidate: the reader followed, unfollowed, muted or unmuted someone (after the
-- commit): the cached view goes and its version moves, so a fill that read the database
-- before the change is refused (view-fill).
-- KEYS[1] the reader's view rv:{user}
-- KEYS[2] the view's version rvv:{user}
-- ARGV[1] the version's time to live in ms
-- returns the new version
local version = redis.call("INCR", KEYS[2])
redis.call("PEXPIRE", KEYS[2], ARGV[1])
redis.call("DEL", KEYS[1])
return version
