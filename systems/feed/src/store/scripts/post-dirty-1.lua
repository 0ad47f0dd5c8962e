-- post-dirty: marks a post "being edited" before its edit or delete commits (FD-21): reads ask
-- the database, and any lease a reader holds is gone (its fill is refused), until the edit's
-- own write replaces the marker — or, when that write is lost (Redis unreachable after the
-- commit), until the marker expires; a fill after that needs a lease taken after it.
-- KEYS[1] the post's body key pa:{id}
-- ARGV[1] the marker's time to live in ms
-- returns 1
redis.call("SET", KEYS[1], "D", "PX", ARGV[1])
return 1
