-- region-close: the rebalancer closes this region's window and opens the next epoch, share unchanged.
-- Mirrors closeRegionalWindow in src/domain/regional-limit.ts exactly.
-- KEYS[1] region quota hash {shareUnits?, epoch, windowStartMs, admitted, refused} of one (policy, subject)
-- returns {closed epoch, nowMs, used, demand, windowMs, shareUnits (-1: static share), next epoch}
-- The key is persisted: a subject the rebalancer tracks must not expire in one region and not another.
--- @include "server-time-ms"
local now = serverTimeMs()
local s = redis.call('HMGET', KEYS[1], 'shareUnits', 'epoch', 'windowStartMs', 'admitted', 'refused')
local epoch, used, demand, windowMs, share = 0, 0, 0, 0, -1
if s[3] then
  epoch, used, share = tonumber(s[2]), tonumber(s[4]), tonumber(s[1]) or -1
  demand = used + tonumber(s[5])
  windowMs = math.max(0, now - tonumber(s[3]))
end
redis.call('HSET', KEYS[1], 'epoch', epoch + 1, 'windowStartMs', now, 'admitted', 0, 'refused', 0)
redis.call('PERSIST', KEYS[1])
return {epoch, now, used, demand, windowMs, share, epoch + 1}
