-- region-publish: sets the region's share for one epoch, only while that epoch is the open window.
-- Mirrors publishRegionalShare in src/domain/regional-limit.ts exactly.
-- KEYS[1] region quota hash {shareUnits?, epoch, windowStartMs, admitted, refused} of one (policy, subject)
-- ARGV[1] epoch the share is for (as returned by region-close; integer >= 1)
-- ARGV[2] shareUnits (integer >= 0)
-- returns {applied 1|0, the key's current epoch (-1 when it has none)}
local epoch, share = tonumber(ARGV[1]), tonumber(ARGV[2])
if not (epoch and share) or epoch < 1 or share < 0 then
  return redis.error_reply('ERR usage: epoch >= 1, shareUnits >= 0')
end
local current = tonumber(redis.call('HGET', KEYS[1], 'epoch'))
-- A publish delayed past the next close must not overwrite a newer window's share.
if current ~= epoch then return {0, current or -1} end
redis.call('HSET', KEYS[1], 'shareUnits', share)
return {1, current}
