-- fixed-window-n.lua: fixed window counter over N keys: all-or-nothing, or each on its own.
-- Mirrors src/domain/fixed-window.ts and decideAll / decideEach in src/domain/algorithm.ts exactly.
-- KEYS[1..] the window's count, an integer, whose expiry is the window's end (stored-timed; a key in an
--          older format, a hash or "windowStartMs:count", is read and rewritten so). spend, refund: distinct
--          keys, one hash slot (RL-08).
--          each: a key may repeat; the store sends keys of one slot in cluster mode (it enforces
--          that), any keys on a standalone Redis.
-- ARGV[1]  "spend" | "refund" | "each"
-- ARGV[2..] per key KEYS[i], stride 3: limit, windowMs, cost of KEYS[i] (stride 3; validated by the caller).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs (0), then per key i: allowed_i, remaining_i, resetMs_i};
--          every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          refund: {1, nowMs, 0, 0}; cost taken back from every key's current window.
--          each:   {allowedCount, nowMs, 0, 0, then per key i: allowed_i, remaining_i, resetMs_i, retryAfterMs_i,
--          delayMs_i (0)}: keys decided in order, each on its own (independent requests coalesced into one
--          call); an allowed key is written at once, so a repeat of it sees the write; a refusal writes nothing.
-- Time is the server's TIME, never the caller's; windows are aligned to it (multiples of windowMs).
--- @include "server-time-ms"
--- @include "batch-mode"
--- @include "stored-timed"
local now = serverTimeMs()
local mode, each, usage = readMode(3, 'limit, windowMs, cost')
if usage then return usage end
-- Flat arrays and an explicit length n: no table per key on this hot path.
local reply, n, writes = {each and 0 or 1, now, 0, 0}, 4, {}
for i, key in ipairs(KEYS) do
  local limit, w, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local storedCount, storedStart = readTimed(key, w, now, 'windowStartMs', 'count', true)
  local start, count = now - now % w, 0
  -- RL-05: a stored window later than now's (clock stepped back) is kept, never reopened.
  if storedStart and storedStart >= start then start, count = storedStart, storedCount end
  local untilEnd = start + w - now
  local ok = count + cost <= limit
  if mode == 'refund' then count = math.max(0, count - cost)
  elseif ok then count = count + cost end
  if each then
    if ok then
      writeTimed(key, count, start, w)
      reply[1] = reply[1] + 1
    end
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] =
      ok and 1 or 0, limit - count, untilEnd, ok and 0 or untilEnd, 0
    n = n + 5
  else
    writes[3 * i - 2], writes[3 * i - 1], writes[3 * i] = start, count, w
    if mode == 'spend' then
      if not ok then reply[1] = 0; reply[3] = math.max(reply[3], untilEnd) end
      reply[n + 1], reply[n + 2], reply[n + 3] = ok and 1 or 0, limit - count, untilEnd
      n = n + 3
    end
  end
end
if mode == 'refund' or (mode == 'spend' and reply[1] == 1) then
  for i, key in ipairs(KEYS) do
    writeTimed(key, writes[3 * i - 1], writes[3 * i - 2], writes[3 * i])
  end
end
return reply
