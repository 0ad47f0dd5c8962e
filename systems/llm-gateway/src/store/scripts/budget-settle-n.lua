-- budget-settle-n.lua: replace reservations by the provider's usage on N limits (LG-06's refund).
-- Mirrors settleOne in src/domain/token-window.ts exactly (the twin runs that function).
-- KEYS[1..] hash {windowId, used} of one limit; distinct.
-- ARGV[1]  windowMs
-- ARGV[2]  the window the reservation was made in
-- ARGV[3..] per key KEYS[i], stride 2: limit, delta (usage - reservation; negative = refund)
-- Returns  1. In the reservation's window the delta is applied (used never below 0); after it, a refund
--          is dropped and an excess is charged to the current window (debt, never forgiven).
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local windowMs, reserved = tonumber(ARGV[1]), tonumber(ARGV[2])
local window = math.floor(now / windowMs)
for i, key in ipairs(KEYS) do
  local limit, delta = tonumber(ARGV[2 * i + 1]), tonumber(ARGV[2 * i + 2])
  local s = redis.call('HMGET', key, 'windowId', 'used')
  local w, u = tonumber(s[1]), tonumber(s[2])
  local rolled = 0
  if w ~= nil and w <= window then rolled = math.max(0, u - limit * (window - w)) end
  if reserved == window then rolled = math.max(0, rolled + delta) else rolled = rolled + math.max(0, delta) end
  redis.call('HSET', key, 'windowId', window, 'used', rolled)
  redis.call('PEXPIRE', key, windowMs * (2 + math.floor(rolled / limit)))
end
return 1
