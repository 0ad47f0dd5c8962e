-- ranking-save: stores a session's ranked ids (FD-22), replacing any earlier ranking of it.
-- KEYS[1] the session's ranking (list)
-- ARGV[1] time to live in ms
-- ARGV[2] the ids in rank order, "id,id,…" (possibly empty)
-- returns how many ids were stored
redis.call("DEL", KEYS[1])
local n = 0
for id in string.gmatch(ARGV[2], "(%d+)") do
  redis.call("RPUSH", KEYS[1], id)
  n = n + 1
end
if n == 0 then
  redis.call("RPUSH", KEYS[1], "0")
end
redis.call("PEXPIRE", KEYS[1], ARGV[1])
return n
