-- gcra-n.lua: generic cell rate algorithm over N keys, all-or-nothing.
-- Mirrors src/domain/gcra.ts and decideAll in src/domain/algorithm.ts exactly.
-- KEYS[1..] hash {tatUs} (theoretical arrival time, engine µs) of one key; distinct keys, one hash slot (RL-08).
-- ARGV[1]  "spend" | "refund"
-- ARGV[2..] per key KEYS[i], stride 3: burst, ratePerS, cost of KEYS[i] (stride 3; validated by the caller).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs (0), then per key i: allowed_i, remaining_i, resetMs_i};
--          every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          refund: {1, nowMs, 0, 0}; every key's TAT moves back by cost intervals (not before now).
-- Time is the server's TIME, never the caller's; integers only (µs below 2^53, sent as %.17g).
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local mode, nowUs = ARGV[1], now * 1000
if (mode ~= 'spend' and mode ~= 'refund') or #ARGV ~= 1 + 3 * #KEYS then
  return redis.error_reply('ERR usage: ARGV[1] spend|refund, then burst, ratePerS, cost per key')
end
local reply, writes = {1, now, 0, 0}, {}
for i, key in ipairs(KEYS) do
  local burst, ratePerS, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local interval = math.floor(1000000 / ratePerS + 0.5) -- emission interval, whole µs
  local tolerance = burst * interval
  -- TAT is never in the past; a TAT ahead of a clock that stepped back is kept (RL-05).
  local tat = math.max(tonumber(redis.call('HGET', key, 'tatUs')) or nowUs, nowUs)
  local nextTat = tat + cost * interval
  local ok = nextTat - nowUs <= tolerance
  if mode == 'refund' then tat = math.max(nowUs, tat - cost * interval)
  elseif ok then tat = nextTat
  else reply[1] = 0; reply[3] = math.max(reply[3], math.ceil((nextTat - tolerance - nowUs) / 1000)) end
  writes[i] = {tat, math.max(1, math.ceil((tat - nowUs) / 1000))}
  if mode == 'spend' then
    local remaining = math.max(0, math.floor((nowUs + tolerance - tat) / interval))
    for _, v in ipairs({ok and 1 or 0, remaining, math.ceil((tat - nowUs) / 1000)}) do reply[#reply + 1] = v end
  end
end
if mode == 'refund' or reply[1] == 1 then
  for i, key in ipairs(KEYS) do
    redis.call('HSET', key, 'tatUs', writes[i][1])
    redis.call('PEXPIRE', key, writes[i][2])
  end
end
return reply
