-- budget-reserve-n.lua: reserve a request's cost on N limits at once, all or nothing (LG-06, LG-07).
-- Mirrors reserveAll in src/domain/token-window.ts exactly (the twin runs that function).
-- KEYS[1..] hash {windowId, used} of one limit (tenant TPM, tenant RPM, model, destination …); distinct.
-- ARGV[1]  windowMs
-- ARGV[2..] per key KEYS[i], stride 2: limit, cost
-- Returns  {allowed, windowId, retryAfterMs, refusedLine}: allowed 1 writes used + cost on every key;
--          allowed 0 writes nothing, retryAfterMs = ms until the tightest limit has room (-1: never,
--          a cost above its limit), refusedLine = the 1-based key that decided it.
-- Time is the server's TIME, never the caller's: replicas with skewed clocks share one window.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local windowMs = tonumber(ARGV[1])
local window = math.floor(now / windowMs)
local used, retry, refused = {}, 0, 0
for i, key in ipairs(KEYS) do
  local limit, cost = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local s = redis.call('HMGET', key, 'windowId', 'used')
  local w, u = tonumber(s[1]), tonumber(s[2])
  -- debt: a new window starts with the old windows' overage (rollTo)
  local rolled = 0
  if w ~= nil and w <= window then rolled = math.max(0, u - limit * (window - w)) end
  used[i] = rolled
  if rolled + cost > limit then
    local wait = -1
    if cost <= limit then wait = (window + math.ceil((rolled + cost - limit) / limit)) * windowMs - now end
    if refused == 0 or wait == -1 or (retry ~= -1 and wait > retry) then retry, refused = wait, i end
  end
end
if refused > 0 then return {0, window, retry, refused} end
for i, key in ipairs(KEYS) do
  local limit, cost = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local u = used[i] + cost
  redis.call('HSET', key, 'windowId', window, 'used', u)
  redis.call('PEXPIRE', key, windowMs * (2 + math.floor(u / limit)))
end
return {1, window, 0, 0}
