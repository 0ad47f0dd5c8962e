-- celebrity-fill: caches an author's newest ids read from the database after a miss (FD-13),
-- only if no post of the author was added since the miss (the version is unchanged) and
-- nobody filled it meanwhile: a fill never hides a post made while it read the database.
-- Fewer ids than the window means the list holds every post: the marker "0" says so.
-- KEYS[1] the author's recent ids cr:{author}
-- KEYS[2] the list's version crv:{author}
-- ARGV[1] the version the miss saw
-- ARGV[2] the list's time to live in ms
-- ARGV[3] entries a list holds at most (the window)
-- ARGV[4] the ids, "score:id,score:id,…" (possibly empty)
-- returns 1 when filled, 0 when refused
if (redis.call("GET", KEYS[2]) or "0") ~= ARGV[1] or redis.call("EXISTS", KEYS[1]) == 1 then
  return 0
end
local n = 0
for score, id in string.gmatch(ARGV[4], "(%d+):(%d+)") do
  redis.call("ZADD", KEYS[1], score, id)
  n = n + 1
end
if n < tonumber(ARGV[3]) then
  redis.call("ZADD", KEYS[1], 0, "0")
end
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return 1
