-- gcra-n.lua: generic cell rate algorithm over N keys: all-or-nothing, or each on its own.
-- Mirrors src/domain/gcra.ts and decideAll / decideEach in src/domain/algorithm.ts exactly.
-- KEYS[1..] hash {tatUs} (theoretical arrival time, engine µs) of one key. spend, refund: distinct keys,
--          one hash slot (RL-08). each: a key may repeat; the store sends keys of one slot in cluster
--          mode (it enforces that), any keys on a standalone Redis.
-- ARGV[1]  "spend" | "refund" | "each"
-- ARGV[2..] per key KEYS[i], stride 3: burst, ratePerS, cost of KEYS[i] (stride 3; validated by the caller).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs (0), then per key i: allowed_i, remaining_i, resetMs_i};
--          every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          refund: {1, nowMs, 0, 0}; every key's TAT moves back by cost intervals (not before now).
--          each:   {allowedCount, nowMs, 0, 0, then per key i: allowed_i, remaining_i, resetMs_i, retryAfterMs_i,
--          delayMs_i (0)}: keys decided in order, each on its own (independent requests coalesced into one
--          call); an allowed key is written at once, so a repeat of it sees the write; a refusal writes nothing.
-- Time is the server's TIME, never the caller's; integers only (µs below 2^53, sent as %.17g).
--- @include "server-time-ms"
--- @include "batch-mode"
local now = serverTimeMs()
local mode, each, usage = readMode(3, 'burst, ratePerS, cost')
if usage then return usage end
local nowUs = now * 1000
-- Flat arrays and an explicit length n: no table per key on this hot path.
local reply, n, writes = {each and 0 or 1, now, 0, 0}, 4, {}
for i, key in ipairs(KEYS) do
  local burst, ratePerS, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local interval = math.floor(1000000 / ratePerS + 0.5) -- emission interval, whole µs
  local tolerance = burst * interval
  -- TAT is never in the past; a TAT ahead of a clock that stepped back is kept (RL-05).
  local tat = math.max(tonumber(redis.call('HGET', key, 'tatUs')) or nowUs, nowUs)
  local nextTat = tat + cost * interval
  local ok, retry = nextTat - nowUs <= tolerance, 0
  if mode == 'refund' then tat = math.max(nowUs, tat - cost * interval)
  elseif ok then tat = nextTat
  else retry = math.ceil((nextTat - tolerance - nowUs) / 1000) end
  local reset = math.ceil((tat - nowUs) / 1000)
  local remaining = math.max(0, math.floor((nowUs + tolerance - tat) / interval))
  if each then
    if ok then
      redis.call('HSET', key, 'tatUs', tat)
      redis.call('PEXPIRE', key, math.max(1, reset))
      reply[1] = reply[1] + 1
    end
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] =
      ok and 1 or 0, remaining, reset, retry, 0
    n = n + 5
  else
    writes[2 * i - 1], writes[2 * i] = tat, math.max(1, reset)
    if mode == 'spend' then
      if not ok then reply[1] = 0; reply[3] = math.max(reply[3], retry) end
      reply[n + 1], reply[n + 2], reply[n + 3] = ok and 1 or 0, remaining, reset
      n = n + 3
    end
  end
end
if mode == 'refund' or (mode == 'spend' and reply[1] == 1) then
  for i, key in ipairs(KEYS) do
    redis.call('HSET', key, 'tatUs', writes[2 * i - 1])
    redis.call('PEXPIRE', key, writes[2 * i])
  end
end
return reply
