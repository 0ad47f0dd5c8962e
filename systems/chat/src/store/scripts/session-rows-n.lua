-- session-rows-n.lua: the session rows of N users in one call (the send path's lookup, CH-04/CH-16).
-- KEYS[1..]  the users' session hashes, <prefix>sess:<user>, one field per connection
--            (<device>:<connection>) holding the row as JSON with its own expiresAtMs.
--            Keys of many slots: chat's session table is one Redis, not a cluster.
-- (no ARGV)
-- Returns    one array per key, in KEYS order: that hash's HGETALL (field, row, field, row…;
--            empty for a user with no row). Expired rows are returned too: the caller filters
--            them by expiresAtMs and deletes them, so reads decide with the caller's clock as before.
-- Why a script: one command and one reply per message instead of one per member (a group's
-- message looked up 50 hashes as 50 pipelined commands, each its own object, promise and timer).
local rows = {}
for i, key in ipairs(KEYS) do
  rows[i] = redis.call('HGETALL', key)
end
return rows
