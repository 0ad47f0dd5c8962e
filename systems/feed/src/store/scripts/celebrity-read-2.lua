-- celebrity-read: a pulled author's newest ids from their cached list (FD-13), or, when the
-- list is not cached, the list's version for a race-free fill (celebrity-fill). The member
-- "0" (score 0, so always last) marks a list that holds ALL the author's posts since its fill;
-- reaching it means nothing older exists, missing it means older posts may (a deep page).
-- KEYS[1] the author's recent ids cr:{author} (zset: score ms, member id)
-- KEYS[2] the list's version crv:{author} (bumped by every post of the author)
-- ARGV[1] highest score to return (ms, inclusive; "+inf" for the newest)
-- ARGV[2] most ids to return
-- returns { 1, complete (1 when the marker was reached), id… } when cached, { 0, version } when not
if redis.call("EXISTS", KEYS[1]) == 0 then
  return { 0, redis.call("GET", KEYS[2]) or "0" }
end
local out = { 1, 0 }
for _, id in ipairs(redis.call("ZREVRANGEBYSCORE", KEYS[1], ARGV[1], "-inf", "LIMIT", 0, ARGV[2] + 1)) do
  if id == "0" then
    out[2] = 1
  elseif #out - 2 < tonumber(ARGV[2]) then
    table.insert(out, id)
  end
end
return out
