-- celebrity-read: a pulled author's newest ids from their cached list (FD-13), or, when the
-- list is not cached, the list's version for a race-free fill (celebrity-fill).
-- KEYS[1] the author's recent ids cr:{author} (zset: score ms, member id; "0" marks it filled)
-- KEYS[2] the list's version crv:{author} (bumped by every post of the author)
-- ARGV[1] highest score to return (ms, inclusive; "+inf" for the newest)
-- ARGV[2] most ids to return
-- returns { 1, size, id… } when cached (size: entries held, the marker excluded), { 0, version } when not
if redis.call("EXISTS", KEYS[1]) == 0 then
  return { 0, redis.call("GET", KEYS[2]) or "0" }
end
local out = { 1, 0 }
local size = redis.call("ZCARD", KEYS[1])
if redis.call("ZSCORE", KEYS[1], "0") then
  size = size - 1
end
out[2] = size
for _, id in ipairs(redis.call("ZREVRANGEBYSCORE", KEYS[1], ARGV[1], "-inf", "LIMIT", 0, ARGV[2])) do
  if id ~= "0" then
    table.insert(out, id)
  end
end
return out
