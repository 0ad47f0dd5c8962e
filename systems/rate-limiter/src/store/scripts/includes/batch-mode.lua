-- batch-mode: the calling convention of the <algorithm>-n.lua scripts. ARGV[1] is the mode,
-- "spend" | "refund" | "each", then `stride` values per key (`perKey` names them for the usage
-- error). Returns mode, each (mode == 'each'), or nil, nil and the error reply to return.
local function readMode(stride, perKey)
  local mode = ARGV[1]
  local each = mode == 'each'
  if (mode ~= 'spend' and mode ~= 'refund' and not each) or #ARGV ~= 1 + stride * #KEYS then
    return nil, nil, redis.error_reply('ERR usage: ARGV[1] spend|refund|each, then ' .. perKey .. ' per key')
  end
  return mode, each
end
