-- stored-pair: a state of two integers as one string "a:b", written with SET PX: the compact
-- encoding (issue 15; a hash with named fields costs ~16 B more per key). A key still in the old
-- format, a hash {fieldA, fieldB}, is read from its fields and rewritten at once as the string,
-- its TTL kept (KEEPTTL): the decision that meets it migrates it, whatever that decision is.
-- Mirrors readStoredPair / pairToStored in src/domain/algorithm.ts and readState in
-- src/store/script-twins.ts. Returns a, b (nil, nil when the key is absent).
local function readPair(key, fieldA, fieldB)
  local raw = redis.pcall('GET', key)
  if type(raw) == 'table' then -- WRONGTYPE: the old format
    local s = redis.call('HMGET', key, fieldA, fieldB)
    if not (s[1] and s[2]) then return nil, nil end
    redis.call('SET', key, s[1] .. ':' .. s[2], 'KEEPTTL')
    return tonumber(s[1]), tonumber(s[2])
  end
  if not raw then return nil, nil end
  local a, b = string.match(raw, '^(%-?%d+):(%-?%d+)$')
  return tonumber(a), tonumber(b)
end
-- Writes a, b (integers below 2^53; %d prints them whole) with a TTL of ttl ms.
local function writePair(key, a, b, ttl)
  redis.call('SET', key, string.format('%d:%d', a, b), 'PX', ttl)
end
