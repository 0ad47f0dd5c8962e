-- The server's clock in ms: every script decides on Redis's TIME, never a caller's clock.
local function serverTimeMs()
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
