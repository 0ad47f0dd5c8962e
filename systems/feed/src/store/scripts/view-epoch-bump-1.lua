-- view-epoch-bump: an author crossed the tier line (FD-08): every cached view may name the
-- wrong pulled followees now, so all of them stop being valid at once (view-read).
-- KEYS[1] the epoch rv:epoch
-- returns the new epoch
return redis.call("INCR", KEYS[1])
