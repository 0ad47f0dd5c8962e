-- ranking-page: positions [start, start + count) of a session's ranking (FD-22).
-- KEYS[1] the session's ranking (list)
-- ARGV[1] start position
-- ARGV[2] count
-- returns { exists, id… }: exists 0 when the session expired
if redis.call("EXISTS", KEYS[1]) == 0 then
  return { 0 }
end
local ids = redis.call("LRANGE", KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[1]) + tonumber(ARGV[2]) - 1)
table.insert(ids, 1, 1)
return ids
