-- sliding-window-log-n.lua: sliding window log over N keys, all-or-nothing.
-- Mirrors src/domain/sliding-window-log.ts and decideAll in src/domain/algorithm.ts exactly.
-- KEYS[1..] sorted set of one key: member "<requestId>:<unit>", score = admission ms; distinct keys,
--          all in one hash slot (RL-08). One entry per admitted unit: memory grows with the limit.
-- ARGV[1]  "spend" | "refund"
-- ARGV[2..] per key KEYS[i], stride 4: limit, windowMs, cost, requestId of KEYS[i]
--          (stride 4; validated by the caller; requestId unique per request).
-- Returns  spend:  {allowed, nowMs, retryAfterMs, delayMs (0), then per key i: allowed_i, remaining_i, resetMs_i};
--          every key is written only if all allow; otherwise none is, and retryAfterMs is the largest refusal's.
--          An error if an allowed key already holds a live entry of requestId (a reused id would undercount).
--          refund: {1, nowMs, 0, 0}; removes the request's entries from every key.
-- Time is the server's TIME, never the caller's. The window is (now - windowMs, now].
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local mode = ARGV[1]
if (mode ~= 'spend' and mode ~= 'refund') or #ARGV ~= 1 + 4 * #KEYS then
  return redis.error_reply('ERR usage: ARGV[1] spend|refund, then limit, windowMs, cost, requestId per key')
end
local reply, writes = {1, now, 0, 0}, {}
for i, key in ipairs(KEYS) do
  local limit, w, cost, id = tonumber(ARGV[4 * i - 2]), tonumber(ARGV[4 * i - 1]), tonumber(ARGV[4 * i]), ARGV[4 * i + 1]
  local oldest = string.format('(%d', now - w) -- live entries score > now - w
  local live = redis.call('ZCOUNT', key, oldest, '+inf')
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2] -- the newest entry's score
  local newest = top and tonumber(top)
  local ok = live + cost <= limit
  if mode == 'spend' and ok then
    for u = 0, cost - 1 do
      local score = redis.call('ZSCORE', key, id .. ':' .. u)
      if score and tonumber(score) > now - w then return redis.error_reply('ERR requestId already in the log: ' .. id) end
    end
    live, newest = live + cost, math.max(newest or now, now)
  elseif mode == 'spend' then -- the (live + cost - limit)-th oldest live entry must leave first
    local leaves = redis.call('ZRANGEBYSCORE', key, oldest, '+inf', 'WITHSCORES', 'LIMIT', live + cost - limit - 1, 1)
    reply[1] = 0; reply[3] = math.max(reply[3], tonumber(leaves[2]) + w - now)
  end
  local untilEmpty = 0
  if live > 0 then untilEmpty = newest + w - now end
  writes[i] = {w, cost, id, untilEmpty}
  if mode == 'spend' then
    for _, v in ipairs({ok and 1 or 0, math.max(0, limit - live), untilEmpty}) do reply[#reply + 1] = v end
  end
end
if mode == 'refund' or reply[1] == 1 then
  for i, key in ipairs(KEYS) do
    local w, cost, id = writes[i][1], writes[i][2], writes[i][3]
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - w)
    for u = 0, cost - 1 do
      if mode == 'spend' then redis.call('ZADD', key, now, id .. ':' .. u) else redis.call('ZREM', key, id .. ':' .. u) end
    end
    local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
    if last then redis.call('PEXPIRE', key, tonumber(last) + w - now) end
  end
end
return reply
