-- list-add: the list variant of a fan-out write (FD-11/17), for the comparison: LPUSH + LTRIM
-- keeps a fixed size, but a redelivered id is pushed twice (the client dedupes by id).
-- KEYS[1] the follower's timeline (list)
-- ARGV[1] post id
-- ARGV[2] cap
-- returns the list's length after the trim
redis.call("LPUSH", KEYS[1], ARGV[1])
redis.call("LTRIM", KEYS[1], 0, tonumber(ARGV[2]) - 1)
return redis.call("LLEN", KEYS[1])
