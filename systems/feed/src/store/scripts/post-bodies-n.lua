-- post-bodies: the cached bodies of some posts (FD-10/21); where nothing is cached, a lease
-- for the caller (memcache's leases): the key then holds "L<token>", and only a fill carrying
-- that token may replace it (post-fill) — an edit, a delete or an eviction in between removes
-- the lease, and with it the right to fill what the caller read from the database.
-- KEYS[1..] the posts' body keys pa:{id}
-- ARGV[1] the caller's lease token
-- ARGV[2] the lease's time to live in ms
-- returns one value per key: "version|author|json" (live), "version|-" (deleted), "" (not
-- cached: the lease is the caller's), or "D" / "L…" (being edited, or another reader's lease:
-- ask the database, do not fill)
local out = {}
for i = 1, #KEYS do
  local value = redis.call("GET", KEYS[i])
  if not value then
    redis.call("SET", KEYS[i], "L" .. ARGV[1], "PX", ARGV[2])
    value = ""
  end
  out[i] = value
end
return out
