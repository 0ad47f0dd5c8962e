-- server-time-ms: the engine's clock in whole ms. Every decision reads it, never a caller's
-- clock (RL-05): a client whose clock steps back cannot mint tokens.
local function serverTimeMs()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
