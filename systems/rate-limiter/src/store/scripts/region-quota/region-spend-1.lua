-- region-spend: RL-14 request path of one region; admits cost units against the region's share.
-- Mirrors decideRegional in src/domain/regional-limit.ts exactly. Reads only this region's Redis.
-- KEYS[1] region quota hash {shareUnits?, epoch, windowStartMs, admitted, refused} of one (policy, subject)
-- ARGV[1] cost (integer >= 1)
-- ARGV[2] staticShare: enforced while no share is published (integer >= 0)
-- ARGV[3] intervalMs: when the rebalancer is expected to close the window (integer >= 1)
-- ARGV[4] maxWindowMs: a window older than this closes itself (integer >= intervalMs)
-- returns {allowed 1|0, nowMs, shareUnits in force, remaining, retryAfterMs (0 when allowed), epoch}
-- A refusal admits nothing; it counts `refused` (the demand signal). Time is the server's TIME.
--- @include "server-time-ms"
local now = serverTimeMs()
local cost, static, interval, maxWindow = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not (cost and static and interval and maxWindow) or cost < 1 or static < 0 or interval < 1
  or maxWindow < interval then
  return redis.error_reply('ERR usage: cost >= 1, staticShare >= 0, intervalMs >= 1, maxWindowMs >= intervalMs')
end
local s = redis.call('HMGET', KEYS[1], 'shareUnits', 'epoch', 'windowStartMs', 'admitted', 'refused')
local published = s[3] and tonumber(s[1])
local epoch, start, admitted, refused = 0, now, 0, 0
if s[3] then
  epoch, start, admitted, refused = tonumber(s[2]), tonumber(s[3]), tonumber(s[4]), tonumber(s[5])
  -- RL-05: elapsed clamped at 0; the rebalancer went quiet for maxWindowMs: the window closes itself.
  if math.max(0, now - start) >= maxWindow then start, admitted, refused = now, 0, 0 end
end
local share = published or static
local allowed = admitted + cost <= share
if allowed then admitted = admitted + cost else refused = refused + cost end
local closeAt = start + interval
if now >= closeAt then closeAt = start + maxWindow end
local retryAfter = 0
if not allowed then retryAfter = math.max(1, closeAt - now) end
redis.call('HSET', KEYS[1], 'epoch', epoch, 'windowStartMs', start, 'admitted', admitted, 'refused', refused)
-- Untracked (nothing published): expire when idle, as the window would close anyway (RL-06).
if not published then redis.call('PEXPIRE', KEYS[1], maxWindow) end
return {allowed and 1 or 0, now, share, math.max(0, share - admitted), retryAfter, epoch}
