-- list-read: the newest ids of the list variant (LRANGE), duplicates included.
-- KEYS[1] the timeline (list)
-- ARGV[1] most ids to return
-- returns the ids, newest first
return redis.call("LRANGE", KEYS[1], 0, tonumber(ARGV[1]) - 1)
