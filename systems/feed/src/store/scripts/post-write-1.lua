-- post-write: an edit's or delete's committed body (or tombstone), written through after the
-- commit (FD-21); the row's version orders concurrent edits, so an older write never replaces
-- a newer one, whatever order they arrive in. A marker or a lease is replaced.
-- KEYS[1] the post's body key pa:{id}
-- ARGV[1] the row's version after the commit
-- ARGV[2] "version|author|json" or "version|-"
-- ARGV[3] the body's time to live in ms
-- returns 1 when written, 0 when a newer version is cached
local current = redis.call("GET", KEYS[1])
local version = current and tonumber(string.match(current, "^(%d+)|"))
if version and version >= tonumber(ARGV[1]) then
  return 0
end
redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
return 1
