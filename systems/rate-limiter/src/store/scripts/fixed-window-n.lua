-- fixed-window-n.lua: fixed window counter over N keys, all-or-nothing.
-- Mirrors src/domain/fixed-window.ts and decideAll in src/domain/algorithm.ts exactly.
-- KEYS[1..] hash {windowStartMs, count} of one key; distinct keys, all in one hash slot (RL-08).
-- ARGV[1]  "spend" | "refund"
-- ARGV[2..] per key KEYS[i], stride 3: limit, windowMs, cost of KEYS[i] (stride 3; validated by the caller).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs (0), then per key i: allowed_i, remaining_i, resetMs_i};
--          every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          refund: {1, nowMs, 0, 0}; cost taken back from every key's current window.
-- Time is the server's TIME, never the caller's; windows are aligned to it (multiples of windowMs).
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local mode = ARGV[1]
if (mode ~= 'spend' and mode ~= 'refund') or #ARGV ~= 1 + 3 * #KEYS then
  return redis.error_reply('ERR usage: ARGV[1] spend|refund, then limit, windowMs, cost per key')
end
local reply, writes = {1, now, 0, 0}, {}
for i, key in ipairs(KEYS) do
  local limit, w, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local s = redis.call('HMGET', key, 'windowStartMs', 'count')
  local start, count = now - now % w, 0
  -- RL-05: a stored window later than now's (clock stepped back) is kept, never reopened.
  if s[1] and tonumber(s[1]) >= start then start, count = tonumber(s[1]), tonumber(s[2]) end
  local untilEnd = start + w - now
  local ok = count + cost <= limit
  if mode == 'refund' then count = math.max(0, count - cost)
  elseif ok then count = count + cost
  else reply[1] = 0; reply[3] = math.max(reply[3], untilEnd) end
  writes[i] = {start, count, math.max(1, untilEnd)}
  if mode == 'spend' then
    for _, v in ipairs({ok and 1 or 0, limit - count, untilEnd}) do reply[#reply + 1] = v end
  end
end
if mode == 'refund' or reply[1] == 1 then
  for i, key in ipairs(KEYS) do
    redis.call('HSET', key, 'windowStartMs', writes[i][1], 'count', writes[i][2])
    redis.call('PEXPIRE', key, writes[i][3])
  end
end
return reply
