-- stored-timed: a state of one integer and one instant, stored as the integer alone (as
-- rate-limiter-flexible stores its counter: Redis keeps it inside the object, no allocation)
-- with the instant carried by the key's absolute expiry, instant + span, where span is fixed by
-- the limit (the fixed window: windowMs after its start; the token bucket: 2 x a full refill
-- after its last write). Written with SET PXAT, read back with PEXPIRETIME: both the server's
-- clock in ms, so instant = PEXPIRETIME - span exactly (issue 15).
-- Keys in the older formats, a hash {fieldA, fieldB} and then a string "a:b", carry the instant
-- themselves: the decision that meets one rewrites it at once in this format (or deletes it
-- when its expiry has passed), whatever the decision. Mirrors readStoredTimed / timedToStored in
-- src/domain/stored-timed.ts and readState in src/store/script-twins.ts.

-- Writes value with expiry instant + span (after now for every write the scripts make;
-- %d prints integers below 2^53 whole, where tostring would round them).
local function writeTimed(key, value, instant, span)
  redis.call('SET', key, string.format('%d', value), 'PXAT', string.format('%d', instant + span))
end

-- value, instant stored under key (nil, nil when absent). fieldA, fieldB: the older formats'
-- fields in their "a:b" order; instantFirst: whether fieldA is the instant. Raises an error for
-- an integer without an expiry (written by hand: its instant cannot be known).
local function readTimed(key, span, now, fieldA, fieldB, instantFirst)
  local raw = redis.pcall('GET', key)
  local a, b
  if type(raw) == 'table' then -- WRONGTYPE: the first format, a hash
    local s = redis.call('HMGET', key, fieldA, fieldB)
    if not (s[1] and s[2]) then return nil, nil end
    a, b = tonumber(s[1]), tonumber(s[2])
  elseif not raw then
    return nil, nil
  else
    a, b = string.match(raw, '^(%-?%d+):(%-?%d+)$')
    if not a then
      local at = redis.call('PEXPIRETIME', key)
      if at < 0 then error('stored ' .. (instantFirst and fieldB or fieldA) .. ' has no expiry: ' .. key) end
      return tonumber(raw), at - span
    end
    a, b = tonumber(a), tonumber(b) -- the second format, "a:b"
  end
  local value, instant = b, a
  if not instantFirst then value, instant = a, b end
  if instant + span > now then writeTimed(key, value, instant, span) else redis.call('DEL', key) end
  return value, instant
end
