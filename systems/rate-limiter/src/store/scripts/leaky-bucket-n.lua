-- leaky-bucket-n.lua: leaky bucket as a shaper over N keys: all-or-nothing, or each on its own.
-- Mirrors src/domain/leaky-bucket.ts and decideAll / decideEach in src/domain/algorithm.ts exactly.
-- KEYS[1..] hash {levelMicro, tsMs} of one queue. spend, refund: distinct keys, one hash slot (RL-08).
--          each: a key may repeat; the store sends keys of one slot in cluster mode (it enforces
--          that), any keys on a standalone Redis.
-- ARGV[1]  "spend" | "refund" | "each"
-- ARGV[2..] per key KEYS[i], stride 3: queueCapacity, ratePerS, cost of KEYS[i] (stride 3; validated by the caller).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs, then per key i: allowed_i, remaining_i, resetMs_i};
--          delayMs (largest over the keys) is how long the caller waits before proceeding: uniform output.
--          Every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          refund: {1, nowMs, 0, 0}; cost taken back out of every queue.
--          each:   {allowedCount, nowMs, 0, 0, then per key i: allowed_i, remaining_i, resetMs_i, retryAfterMs_i,
--          delayMs_i}: keys decided in order, each on its own (independent requests coalesced into one call);
--          an allowed key is queued at once, so a repeat of it waits behind it; a refusal writes nothing.
-- Time is the server's TIME, never the caller's; integers only (micro-units, ms).
--- @include "server-time-ms"
--- @include "batch-mode"
--- @include "ms-until"
local now = serverTimeMs()
local mode, each, usage = readMode(3, 'queueCapacity, ratePerS, cost')
if usage then return usage end
local M = 1000000
-- Flat arrays and an explicit length n: no table per key on this hot path.
local reply, n, writes = {each and 0 or 1, now, 0, 0}, 4, {}
for i, key in ipairs(KEYS) do
  local capacity, ratePerS, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local cap, rate, need = capacity * M, ratePerS * 1000, cost * M
  local s = redis.call('HMGET', key, 'levelMicro', 'tsMs')
  local stored, ts = tonumber(s[1]) or 0, tonumber(s[2]) or now -- a missing queue is empty
  -- lazy drain since the last write, elapsed clamped at 0; waits count from the last write too
  local level = math.max(0, stored - math.floor(math.max(0, now - ts) * rate))
  local ahead = math.max(0, ts + msUntil(stored, rate) - now)
  local ok, reset, retry, delay = level + need <= cap, ahead, 0, 0
  if mode == 'refund' then level = math.max(0, level - need)
  elseif ok then delay = ahead; level = level + need; reset = msUntil(level, rate)
  else retry = math.max(0, ts + msUntil(stored + need - cap, rate) - now) end
  if each then
    if ok then
      redis.call('HSET', key, 'levelMicro', level, 'tsMs', now)
      redis.call('PEXPIRE', key, math.max(1, reset))
      reply[1] = reply[1] + 1
    end
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] =
      ok and 1 or 0, math.floor((cap - level) / M), reset, retry, delay
    n = n + 5
  else
    writes[2 * i - 1], writes[2 * i] = level, math.max(1, msUntil(level, rate))
    if mode == 'spend' then
      if ok then reply[4] = math.max(reply[4], delay)
      else reply[1] = 0; reply[3] = math.max(reply[3], retry) end
      reply[n + 1], reply[n + 2], reply[n + 3] = ok and 1 or 0, math.floor((cap - level) / M), reset
      n = n + 3
    end
  end
end
if reply[1] == 0 then reply[4] = 0 end
if mode == 'refund' or (mode == 'spend' and reply[1] == 1) then
  for i, key in ipairs(KEYS) do
    redis.call('HSET', key, 'levelMicro', writes[2 * i - 1], 'tsMs', now)
    redis.call('PEXPIRE', key, writes[2 * i])
  end
end
return reply
