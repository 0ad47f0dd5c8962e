-- seed-token-bucket.lua: the design text's token bucket script, verbatim (seed 000 §1.3), kept
-- only as the bench's FLOOR: one EVALSHA per decision, nothing around it. Not used by the system
-- (src/store/scripts/token-bucket-n.lua is the production script: integers, N keys, all-or-nothing).
-- KEYS[1] the bucket's hash {tokens, ts}
-- ARGV[1] capacity, ARGV[2] tokens per second, ARGV[3] cost
-- Returns {allowed 0|1, floor(tokens), retryMs}; rewrites the bucket and PEXPIREs it on every call.
-- KEYS[1] = chave do balde; ARGV = capacidade, fichas por segundo, custo
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local data = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(data[1])
local ts = tonumber(data[2])
if tokens == nil then
  tokens = capacity
  ts = now
end
local elapsed = math.max(0, now - ts)
tokens = math.min(capacity, tokens + elapsed * rate / 1000)
local allowed = 0
local retry = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = math.ceil((cost - tokens) / rate * 1000)
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) * 2)
return {allowed, math.floor(tokens), retry}
