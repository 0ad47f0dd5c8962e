-- celebrity-fill: caches an author's newest ids read from the database after a miss (FD-13),
-- only if no post of the author was added since the miss (the version is unchanged) and
-- nobody filled it meanwhile: a fill never hides a post made while it read the database.
-- KEYS[1] the author's recent ids cr:{author}
-- KEYS[2] the list's version crv:{author}
-- ARGV[1] the version the miss saw
-- ARGV[2] the list's time to live in ms
-- ARGV[3] the ids, "score:id,score:id,…" (possibly empty)
-- returns 1 when filled, 0 when refused
if (redis.call("GET", KEYS[2]) or "0") ~= ARGV[1] or redis.call("EXISTS", KEYS[1]) == 1 then
  return 0
end
for score, id in string.gmatch(ARGV[3], "(%d+):(%d+)") do
  redis.call("ZADD", KEYS[1], score, id)
end
redis.call("ZADD", KEYS[1], 0, "0")
redis.call("PEXPIRE", KEYS[1], ARGV[2])
return 1
