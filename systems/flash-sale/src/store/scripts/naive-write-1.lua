-- naive-write: FS-03's last step: write the value the caller computed (read − 1), blind.
-- KEYS[1] stock hash {available, epoch}
-- ARGV[1] available to write
-- returns 1
redis.call("HSET", KEYS[1], "available", ARGV[1])
return 1
