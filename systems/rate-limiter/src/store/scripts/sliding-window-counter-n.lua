-- sliding-window-counter-n.lua: sliding window counter over N keys, all-or-nothing.
-- Mirrors src/domain/sliding-window-counter.ts and decideAll in src/domain/algorithm.ts exactly.
-- KEYS[1..] hash {windowStartMs, currentCount, previousCount} of one key; distinct keys, one hash slot (RL-08).
-- ARGV[1]  "spend" | "refund"
-- ARGV[2..] per key KEYS[i], stride 3: limit, windowMs, cost of KEYS[i] (stride 3; validated by the caller).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs (0), then per key i: allowed_i, remaining_i, resetMs_i};
--          every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          refund: {1, nowMs, 0, 0}; cost taken back from every key's current window.
-- Time is the server's TIME. Estimate x windowMs (integers): previous x (windowMs - elapsed) + current x windowMs.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local mode = ARGV[1]
if (mode ~= 'spend' and mode ~= 'refund') or #ARGV ~= 1 + 3 * #KEYS then
  return redis.error_reply('ERR usage: ARGV[1] spend|refund, then limit, windowMs, cost per key')
end
local reply, writes = {1, now, 0, 0}, {}
for i, key in ipairs(KEYS) do
  local limit, w, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local s = redis.call('HMGET', key, 'windowStartMs', 'currentCount', 'previousCount')
  local start, cur, prev, stored = now - now % w, 0, 0, tonumber(s[1])
  if stored and stored >= start then start, cur, prev = stored, tonumber(s[2]), tonumber(s[3]) -- RL-05
  elseif stored == start - w then prev = tonumber(s[2]) end -- roll one window forward
  local used = prev * (w - math.max(0, now - start)) + cur * w
  local ok, remaining = used + cost * w <= limit * w, 0
  if mode == 'refund' then cur = math.max(0, cur - cost)
  elseif ok then cur = cur + cost; remaining = math.floor((limit * w - used - cost * w) / w)
  else
    remaining = math.max(0, math.floor((limit * w - used) / w))
    local room, wait = limit - cost - cur, 0
    if room >= 0 then wait = start + w - math.floor(room * w / prev) - now -- previous weight decays
    else wait = start + 2 * w - math.floor((limit - cost) * w / cur) - now end -- current must decay too
    reply[1] = 0; reply[3] = math.max(reply[3], wait)
  end
  local untilEmpty = 0
  if cur > 0 then untilEmpty = start + 2 * w - now elseif prev > 0 then untilEmpty = start + w - now end
  writes[i] = {start, cur, prev, math.max(1, start + 2 * w - now)}
  if mode == 'spend' then
    for _, v in ipairs({ok and 1 or 0, remaining, untilEmpty}) do reply[#reply + 1] = v end
  end
end
if mode == 'refund' or reply[1] == 1 then
  for i, key in ipairs(KEYS) do
    local x = writes[i]
    redis.call('HSET', key, 'windowStartMs', x[1], 'currentCount', x[2], 'previousCount', x[3])
    redis.call('PEXPIRE', key, x[4])
  end
end
return reply
