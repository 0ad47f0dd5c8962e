-- post-fill: caches bodies read from the database after a miss (FD-21), each only where the
-- key still holds the caller's lease (post-bodies): an edit's or delete's marker or write, an
-- eviction or another fill in between took the lease, and the possibly older body is dropped.
-- KEYS[1..] the posts' body keys pa:{id}
-- ARGV[1] the caller's lease token
-- ARGV[2] the bodies' time to live in ms
-- ARGV[3..] one value per key: "version|author|json" or "version|-"
-- returns how many keys were filled
local filled = 0
for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) == "L" .. ARGV[1] then
    redis.call("SET", KEYS[i], ARGV[i + 2], "PX", ARGV[2])
    filled = filled + 1
  end
end
return filled
