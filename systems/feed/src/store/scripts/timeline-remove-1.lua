-- timeline-remove: an unfollow takes the followee's ids out of the follower's list.
-- KEYS[1] the follower's timeline (zset)
-- ARGV[1] the ids, "id,id,…"
-- returns how many were removed
local removed = 0
for id in string.gmatch(ARGV[1], "(%d+)") do
  removed = removed + redis.call("ZREM", KEYS[1], id)
end
return removed
