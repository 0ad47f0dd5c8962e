-- token-bucket-n.lua: the text's token bucket (000 §1.3) over N keys: all-or-nothing, or each on its own.
-- Mirrors src/domain/token-bucket.ts and decideAll / decideEach in src/domain/algorithm.ts exactly.
-- KEYS[1..] tokensMicro of one bucket, an integer, whose key expires 2 x a full refill after tsMs, the last
--          write (stored-timed; a key in an older format, a hash {tokensMicro, tsMs} or "tokensMicro:tsMs", is
--          read and rewritten so). spend, refund: distinct keys, one hash slot (RL-08).
--          each: a key may repeat; the store sends keys of one slot in cluster mode (it enforces
--          that), any keys on a standalone Redis.
-- ARGV[1]  "spend" | "refund" | "each"
-- ARGV[2..] per key KEYS[i], stride 3: capacity, ratePerS, cost of KEYS[i] (stride 3; validated
--          by the caller with validateCall in src/domain/algorithm.ts).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs (0), then per key i: allowed_i, remaining_i, resetMs_i};
--          every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          refund: {1, nowMs, 0, 0}; every key gets its cost back (a spend another limit refused).
--          each:   {allowedCount, nowMs, 0, 0, then per key i: allowed_i, remaining_i, resetMs_i, retryAfterMs_i,
--          delayMs_i (0)}: keys decided in order, each on its own (independent requests coalesced into one
--          call); an allowed key is written at once, so a repeat of it sees the write; a refusal writes nothing.
-- Time is the server's TIME, never the caller's (RL-05). State is integers only: redis.call sends
-- numbers as %.17g, exact below 2^53. A refusal writes nothing (the text rewrites the bucket).
--- @include "server-time-ms"
--- @include "batch-mode"
--- @include "ms-until"
--- @include "stored-timed"
local now = serverTimeMs()
local mode, each, usage = readMode(3, 'capacity, ratePerS, cost')
if usage then return usage end
local M = 1000000
-- Flat arrays and an explicit length n: no table per key on this hot path.
local reply, n, writes = {each and 0 or 1, now, 0, 0}, 4, {}
for i, key in ipairs(KEYS) do
  local capacity, ratePerS, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local cap, rate, need = capacity * M, ratePerS * 1000, cost * M
  local ttl = math.ceil(capacity / ratePerS * 1000) * 2 -- RL-06: 2 x full refill
  local s1, s2 = readTimed(key, ttl, now, 'tokensMicro', 'tsMs', false)
  local stored, ts = s1 or cap, s2 or now -- a missing bucket is full
  -- lazy refill since the last write (RL-02), elapsed clamped at 0 (RL-05)
  local tokens = math.min(cap, stored + math.floor(math.max(0, now - ts) * rate))
  local ok, reset, retry = tokens >= need, 0, 0
  if mode == 'refund' then tokens = math.min(cap, tokens + need)
  elseif ok then tokens = tokens - need; reset = msUntil(cap - tokens, rate)
  else -- waits count from the last write, as the refill does, so they are exact to the ms
    retry = ts + msUntil(need - stored, rate) - now
    reset = ts + msUntil(cap - stored, rate) - now
  end
  if each then
    if ok then
      writeTimed(key, tokens, now, ttl)
      reply[1] = reply[1] + 1
    end
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] =
      ok and 1 or 0, math.floor(tokens / M), reset, retry, 0
    n = n + 5
  else
    writes[2 * i - 1], writes[2 * i] = tokens, ttl
    if mode == 'spend' then
      if not ok then reply[1] = 0; reply[3] = math.max(reply[3], retry) end
      reply[n + 1], reply[n + 2], reply[n + 3] = ok and 1 or 0, math.floor(tokens / M), reset
      n = n + 3
    end
  end
end
if mode == 'refund' or (mode == 'spend' and reply[1] == 1) then
  for i, key in ipairs(KEYS) do
    writeTimed(key, writes[2 * i - 1], now, writes[2 * i])
  end
end
return reply
