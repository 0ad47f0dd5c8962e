-- stored-window: the fixed window as rate-limiter-flexible stores its counter (issue 15): the
-- count alone, a plain integer (Redis keeps it inside the object: no allocation), and the
-- window's end as the key's absolute expiry, written with SET PXAT and read back with
-- PEXPIRETIME (both the server's clock in ms, so start = PEXPIRETIME - windowMs exactly).
-- Keys in the two older formats, a hash {windowStartMs, count} and then a string
-- "windowStartMs:count", carry their start themselves: the decision that meets one rewrites it
-- at once as the count with its window's end (or deletes it when that window is over),
-- whatever the decision. Mirrors fixedWindowFromStored / fixedWindowToStored in
-- src/domain/fixed-window.ts and readState in src/store/script-twins.ts.

-- Writes a window's count with its end as the key's expiry (end > now for every write made;
-- %d prints integers below 2^53 whole, where tostring would round them).
local function writeWindow(key, start, count, w)
  redis.call('SET', key, string.format('%d', count), 'PXAT', string.format('%d', start + w))
end

-- The window stored under key: start, count (nil, nil when the key is absent). Raises an error
-- for a count without an expiry (written by hand: its window cannot be known).
local function readWindow(key, w, now)
  local raw = redis.pcall('GET', key)
  local start, count
  if type(raw) == 'table' then -- WRONGTYPE: the first format, a hash
    local s = redis.call('HMGET', key, 'windowStartMs', 'count')
    if not (s[1] and s[2]) then return nil, nil end
    start, count = tonumber(s[1]), tonumber(s[2])
  elseif not raw then
    return nil, nil
  else
    local a, b = string.match(raw, '^(%-?%d+):(%-?%d+)$')
    if not a then
      local at = redis.call('PEXPIRETIME', key)
      if at < 0 then error('stored fixed window count has no expiry: ' .. key) end
      return at - w, tonumber(raw)
    end
    start, count = tonumber(a), tonumber(b) -- the second format, "windowStartMs:count"
  end
  if start + w > now then writeWindow(key, start, count, w) else redis.call('DEL', key) end
  return start, count
end
