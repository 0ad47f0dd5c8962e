-- timeline-read: the newest ids of a timeline at or below a score, and whether it exists or
-- is being rebuilt (FD-19). Reading keeps the list alive: an unread list expires (FD-12).
-- KEYS[1] the user's timeline (zset)
-- KEYS[2] the user's rebuild lock
-- ARGV[1] highest score to return (ms, inclusive; "+inf" for the newest)
-- ARGV[2] lowest score to return (ms, inclusive; "-inf" for no bound)
-- ARGV[3] most ids to return
-- ARGV[4] the list's time to live in ms
-- returns { state, id… }: state 0 = no list, 1 = ready, 2 = being rebuilt
if redis.call("EXISTS", KEYS[1]) == 0 then
  return { 0 }
end
redis.call("PEXPIRE", KEYS[1], ARGV[4])
local ids = redis.call("ZREVRANGEBYSCORE", KEYS[1], ARGV[1], ARGV[2], "LIMIT", 0, ARGV[3])
local state = 1
if redis.call("EXISTS", KEYS[2]) == 1 then
  state = 2
end
table.insert(ids, 1, state)
return ids
