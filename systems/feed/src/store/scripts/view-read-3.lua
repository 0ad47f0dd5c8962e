-- view-read: a reader's cached view (their pulled followees and hidden authors, at a tier
-- line), valid only while the global epoch (bumped when an author crosses the line) and the
-- line are the ones it was made at; otherwise what a race-free fill (view-fill) needs.
-- KEYS[1] the reader's view rv:{user} ("epoch|line|pulled,…|hidden,…")
-- KEYS[2] the view's version rvv:{user} (bumped by the reader's follows, unfollows, mutes)
-- KEYS[3] the epoch rv:epoch
-- ARGV[1] the tier line the reader pulls above
-- returns { 1, view } when valid, { 0, version, epoch } when not
local view = redis.call("GET", KEYS[1])
local epoch = redis.call("GET", KEYS[3]) or "0"
if view then
  local vepoch, vline = string.match(view, "^(%d+)|(%d+)|")
  if vepoch == epoch and vline == ARGV[1] then
    return { 1, view }
  end
end
return { 0, redis.call("GET", KEYS[2]) or "0", epoch }
