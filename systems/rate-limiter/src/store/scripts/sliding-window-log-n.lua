-- sliding-window-log-n.lua: sliding window log over N keys: all-or-nothing, or each on its own.
-- Mirrors src/domain/sliding-window-log.ts and decideAll / decideEach in src/domain/algorithm.ts exactly.
-- KEYS[1..] sorted set of one key: member "<requestId>:<unit>", score = admission ms. spend, refund: distinct
--          keys, one hash slot (RL-08). each: a key may repeat; the store sends keys of one slot in cluster
--          mode (it enforces that), any keys on a standalone Redis. One entry per admitted unit: memory
--          grows with the limit.
-- ARGV[1]  "spend" | "refund" | "each"
-- ARGV[2..] per key KEYS[i], stride 4: limit, windowMs, cost, requestId of KEYS[i]
--          (stride 4; validated by the caller; requestId unique per request).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs (0), then per key i: allowed_i, remaining_i, resetMs_i};
--          every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          An error if an allowed key already holds a live entry of requestId (a reused id would undercount);
--          in mode each the error stops the call there, and the keys decided before it stay written.
--          refund: {1, nowMs, 0, 0}; removes the request's entries from every key.
--          each:   {allowedCount, nowMs, 0, 0, then per key i: allowed_i, remaining_i, resetMs_i, retryAfterMs_i,
--          delayMs_i (0)}: keys decided in order, each on its own (independent requests coalesced into one
--          call); an allowed key is written at once, so a repeat of it sees the write; a refusal writes nothing.
-- Time is the server's TIME, never the caller's. The window is (now - windowMs, now].
--- @include "server-time-ms"
--- @include "batch-mode"
local now = serverTimeMs()
local mode, each, usage = readMode(4, 'limit, windowMs, cost, requestId')
if usage then return usage end
-- Flat arrays and an explicit length n: no table per key on this hot path.
local reply, n, writes = {each and 0 or 1, now, 0, 0}, 4, {}
for i, key in ipairs(KEYS) do
  local limit, w, cost, id = tonumber(ARGV[4 * i - 2]), tonumber(ARGV[4 * i - 1]), tonumber(ARGV[4 * i]), ARGV[4 * i + 1]
  local oldest = string.format('(%d', now - w) -- live entries score > now - w
  local live = redis.call('ZCOUNT', key, oldest, '+inf')
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2] -- the newest entry's score
  local newest = top and tonumber(top)
  local ok, retry = live + cost <= limit, 0
  if mode ~= 'refund' and ok then
    for u = 0, cost - 1 do
      local score = redis.call('ZSCORE', key, id .. ':' .. u)
      if score and tonumber(score) > now - w then return redis.error_reply('ERR requestId already in the log: ' .. id) end
    end
    live, newest = live + cost, math.max(newest or now, now)
  elseif mode ~= 'refund' then -- the (live + cost - limit)-th oldest live entry must leave first
    local leaves = redis.call('ZRANGEBYSCORE', key, oldest, '+inf', 'WITHSCORES', 'LIMIT', live + cost - limit - 1, 1)
    retry = tonumber(leaves[2]) + w - now
  end
  local untilEmpty = 0
  if live > 0 then untilEmpty = newest + w - now end
  if each then
    if ok then -- the newest entry is now's or a later one's: it sets the key's life, as in the write loop
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now - w)
      for u = 0, cost - 1 do redis.call('ZADD', key, now, id .. ':' .. u) end
      redis.call('PEXPIRE', key, untilEmpty)
      reply[1] = reply[1] + 1
    end
    reply[n + 1], reply[n + 2], reply[n + 3], reply[n + 4], reply[n + 5] =
      ok and 1 or 0, math.max(0, limit - live), untilEmpty, retry, 0
    n = n + 5
  else
    writes[2 * i - 1], writes[2 * i] = w, cost
    if mode == 'spend' then
      if not ok then reply[1] = 0; reply[3] = math.max(reply[3], retry) end
      reply[n + 1], reply[n + 2], reply[n + 3] = ok and 1 or 0, math.max(0, limit - live), untilEmpty
      n = n + 3
    end
  end
end
if mode == 'refund' or (mode == 'spend' and reply[1] == 1) then
  for i, key in ipairs(KEYS) do
    local w, cost, id = writes[2 * i - 1], writes[2 * i], ARGV[4 * i + 1]
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - w)
    for u = 0, cost - 1 do
      if mode == 'spend' then redis.call('ZADD', key, now, id .. ':' .. u) else redis.call('ZREM', key, id .. ':' .. u) end
    end
    local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
    if last then redis.call('PEXPIRE', key, tonumber(last) + w - now) end
  end
end
return reply
