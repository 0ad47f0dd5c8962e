-- ms-until: the least whole ms with floor(ms * rate) >= deficit, for the scripts that fill or
-- drain at `rate` micro-units per ms (token bucket, leaky bucket). Mirrors msUntilMicro in
-- src/domain/algorithm.ts.
local function msUntil(deficit, rate)
  if deficit <= 0 then return 0 end
  local ms = math.ceil(deficit / rate) -- float rounding may put it 1 ms off either way
  if math.floor(ms * rate) < deficit then return ms + 1 end
  if math.floor((ms - 1) * rate) >= deficit then return ms - 1 end
  return ms
end
