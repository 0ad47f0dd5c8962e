-- sliding-window-counter-n.lua: sliding window counter over N keys: all-or-nothing, or each on its own.
-- Mirrors src/domain/sliding-window-counter.ts and decideAll / decideEach in src/domain/algorithm.ts exactly.
-- KEYS[1..] hash {windowStartMs, currentCount, previousCount} of one key. spend, refund: distinct keys,
--          one hash slot (RL-08). each: a key may repeat; the store sends keys of one slot in cluster
--          mode (it enforces that), any keys on a standalone Redis.
-- ARGV[1]  "spend" | "refund" | "each"
-- ARGV[2..] per key KEYS[i], stride 3: limit, windowMs, cost of KEYS[i] (stride 3; validated by the caller).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs (0), then per key i: allowed_i, remaining_i, resetMs_i};
--          every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          refund: {1, nowMs, 0, 0}; cost taken back from every key's current window.
--          each:   {allowedCount, nowMs, 0, 0, then per key i: allowed_i, remaining_i, resetMs_i, retryAfterMs_i,
--          delayMs_i (0)}: keys decided in order, each on its own (independent requests coalesced into one
--          call); an allowed key is written at once, so a repeat of it sees the write; a refusal writes nothing.
-- Time is the server's TIME. Estimate x windowMs (integers): previous x (windowMs - elapsed) + current x windowMs.
--- @include "server-time-ms"
--- @include "batch-mode"
local now = serverTimeMs()
local mode, each, usage = readMode(3, 'limit, windowMs, cost')
if usage then return usage end
-- Flat arrays and an explicit length n: no table per key on this hot path.
local reply, n, writes = {each and 0 or 1, now, 0, 0}, 4, {}
for i, key in ipairs(KEYS) do
  local limit, w, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local s = redis.call('HMGET', key, 'windowStartMs', 'currentCount', 'previousCount')
  local start, cur, prev, stored = now - now % w, 0, 0, tonumber(s[1])
  if stored and stored >= start then start, cur, prev = stored, tonumber(s[2]), tonumber(s[3]) -- RL-05
  elseif stored == start - w then prev = tonumber(s[2]) end -- roll one window forward
  local used = prev * (w - math.max(0, now - start)) + cur * w
  local ok, remaining, retry = used + cost * w <= limit * w, 0, 0
  if mode == 'refund' then cur = math.max(0, cur - cost)
  elseif ok then cur = cur + cost; remaining = math.floor((limit * w - used - cost * w) / w)
  else
    remaining = math.max(0, math.floor((limit * w - used) / w))
    local room = limit - cost - cur
    if room >= 0 then retry = start + w - math.floor(room * w / prev) - now -- previous weight decays
    else retry = start + 2 * w - math.floor((limit - cost) * w / cur) - now end -- current must decay too
  end
  local untilEmpty, ttl = 0, math.max(1, start + 2 * w - now)
  if cur > 0 then untilEmpty = start + 2 * w - now elseif prev > 0 then untilEmpty = start + w - now end
  if each then
    if ok then
      redis.call('HSET', key, 'windowStartMs', start, 'currentCount', cur, 'previousCount', prev)
      redis.call('PEXPIRE', key, ttl)
      reply[1] = reply[1] + 1
    end
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] =
      ok and 1 or 0, remaining, untilEmpty, retry, 0
    n = n + 5
  else
    writes[4 * i - 3], writes[4 * i - 2], writes[4 * i - 1], writes[4 * i] = start, cur, prev, ttl
    if mode == 'spend' then
      if not ok then reply[1] = 0; reply[3] = math.max(reply[3], retry) end
      reply[n + 1], reply[n + 2], reply[n + 3] = ok and 1 or 0, remaining, untilEmpty
      n = n + 3
    end
  end
end
if mode == 'refund' or (mode == 'spend' and reply[1] == 1) then
  for i, key in ipairs(KEYS) do
    redis.call('HSET', key, 'windowStartMs', writes[4 * i - 3], 'currentCount', writes[4 * i - 2],
      'previousCount', writes[4 * i - 1])
    redis.call('PEXPIRE', key, writes[4 * i])
  end
end
return reply
