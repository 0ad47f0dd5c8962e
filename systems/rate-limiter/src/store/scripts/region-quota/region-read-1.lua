-- region-read: the region's share and current window, read in one step (ops, recovery, tests).
-- KEYS[1] region quota hash {shareUnits?, epoch, windowStartMs, admitted, refused} of one (policy, subject)
-- returns {exists 1|0, shareUnits (-1: static share), epoch, windowStartMs, admitted, refused}
local s = redis.call('HMGET', KEYS[1], 'shareUnits', 'epoch', 'windowStartMs', 'admitted', 'refused')
if not s[3] then return {0, -1, 0, 0, 0, 0} end
return {1, tonumber(s[1]) or -1, tonumber(s[2]), tonumber(s[3]), tonumber(s[4]), tonumber(s[5])}
