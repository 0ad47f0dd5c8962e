-- token-bucket-n.lua: the text's token bucket (000 §1.3) over N keys, all-or-nothing.
-- Mirrors src/domain/token-bucket.ts and decideAll in src/domain/algorithm.ts exactly.
-- KEYS[1..] hash {tokensMicro, tsMs} of one bucket; distinct keys, all in one hash slot (RL-08).
-- ARGV[1]  "spend" | "refund"
-- ARGV[2..] per key KEYS[i], stride 3: capacity, ratePerS, cost of KEYS[i] (stride 3; validated
--          by the caller with validateCall in src/domain/algorithm.ts).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs (0), then per key i: allowed_i, remaining_i, resetMs_i};
--          every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          refund: {1, nowMs, 0, 0}; every key gets its cost back (a spend another limit refused).
-- Time is the server's TIME, never the caller's (RL-05). State is integers only: redis.call sends
-- numbers as %.17g, exact below 2^53. A refusal writes nothing (the text rewrites the bucket).
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local mode, M = ARGV[1], 1000000
if (mode ~= 'spend' and mode ~= 'refund') or #ARGV ~= 1 + 3 * #KEYS then
  return redis.error_reply('ERR usage: ARGV[1] spend|refund, then capacity, ratePerS, cost per key')
end
local function msUntil(deficit, rate) -- least whole ms with floor(ms * rate) >= deficit
  if deficit <= 0 then return 0 end
  local ms = math.ceil(deficit / rate) -- float rounding may put it 1 ms off either way
  if math.floor(ms * rate) < deficit then return ms + 1 end
  if math.floor((ms - 1) * rate) >= deficit then return ms - 1 end
  return ms
end
local reply, writes = {1, now, 0, 0}, {}
for i, key in ipairs(KEYS) do
  local capacity, ratePerS, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local cap, rate, need = capacity * M, ratePerS * 1000, cost * M
  local s = redis.call('HMGET', key, 'tokensMicro', 'tsMs')
  local stored, ts = tonumber(s[1]) or cap, tonumber(s[2]) or now -- a missing bucket is full
  -- lazy refill since the last write (RL-02), elapsed clamped at 0 (RL-05)
  local tokens = math.min(cap, stored + math.floor(math.max(0, now - ts) * rate))
  local ok, reset = tokens >= need, 0
  if mode == 'refund' then tokens = math.min(cap, tokens + need)
  elseif ok then tokens = tokens - need; reset = msUntil(cap - tokens, rate)
  else -- waits count from the last write, as the refill does, so they are exact to the ms
    reply[1] = 0; reply[3] = math.max(reply[3], ts + msUntil(need - stored, rate) - now)
    reset = ts + msUntil(cap - stored, rate) - now
  end
  writes[i] = {tokens, math.ceil(capacity / ratePerS * 1000) * 2} -- RL-06: 2 x full refill
  if mode == 'spend' then
    for _, v in ipairs({ok and 1 or 0, math.floor(tokens / M), reset}) do
      reply[#reply + 1] = v
    end
  end
end
if mode == 'refund' or reply[1] == 1 then
  for i, key in ipairs(KEYS) do
    redis.call('HSET', key, 'tokensMicro', writes[i][1], 'tsMs', now)
    redis.call('PEXPIRE', key, writes[i][2])
  end
end
return reply
