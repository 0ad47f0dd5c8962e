-- home-read: a warm home-feed page in one round trip (FD-13/14/21): the reader's list, their
-- cached view (pulled followees, hidden authors), each pulled author's cached recent ids and
-- the page's cached bodies, merged newest first, cut at the cursor, deleted posts and hidden
-- authors dropped — the same steps, in the same order, as the read that asks the database.
-- Anything not cached (no list, no valid view, a pulled author's ids, a body) answers { 0 }:
-- the caller then reads the slow way, which fills the caches. It reads the pulled authors'
-- lists and the bodies by name (cr:{author}, pa:{id}, under KEYS[1]'s prefix): a standalone
-- Redis (and its replica), as main configures it; not a Redis Cluster.
-- KEYS[1] the reader's timeline tl:{user}
-- KEYS[2] the reader's rebuild lock
-- KEYS[3] the reader's view rv:{user}
-- KEYS[4] the view epoch rv:epoch
-- ARGV[1] highest score to read (ms, inclusive; "+inf" for the newest)
-- ARGV[2] lowest score to read from the list (ms, inclusive; "-inf" for no bound)
-- ARGV[3] ids read per source (the window, plus the same-millisecond slack under a "before" cursor)
-- ARGV[4] the list's time to live in ms
-- ARGV[5] the cursor's "before" id ("" for none)
-- ARGV[6] the cursor's "since" id ("" for none)
-- ARGV[7] page size
-- ARGV[8] window: candidates taken per source
-- ARGV[9] the tier line the reader pulls above
-- ARGV[10] "1" when celebrity lists are cached, "0" when every read asks the database
-- returns { 1, state (1 ready, 2 being rebuilt), list ids taken, posts on the page, the first
-- post's id, the last one's, the posts' JSON joined by commas } or { 0 }: the bodies are cached
-- as the API writes a post, so the page's posts leave in one string, as the API sends them
local function below(a, b)
  if #a ~= #b then
    return #a < #b
  end
  return a < b
end
if redis.call("EXISTS", KEYS[1]) == 0 then
  return { 0 }
end
local view = redis.call("GET", KEYS[3])
if not view then
  return { 0 }
end
local vepoch, vline, pulled, hidden = string.match(view, "^(%d+)|(%d+)|([%d,]*)|([%d,]*)$")
if vepoch ~= (redis.call("GET", KEYS[4]) or "0") or vline ~= ARGV[9] then
  return { 0 }
end
if pulled ~= "" and ARGV[10] ~= "1" then
  return { 0 }
end
local prefix = string.match(KEYS[1], "^(.-)tl:{%d+}$")
local before, since = ARGV[5], ARGV[6]
local window = tonumber(ARGV[8])
redis.call("PEXPIRE", KEYS[1], ARGV[4])
-- Each source's ids (the list's, each pulled author's) newest first, as read, each id once.
local seen = {}
local function take(source, id)
  if since ~= "" and not below(since, id) then
    return
  end
  if not seen[id] then
    seen[id] = true
    source[#source + 1] = id
  end
end
-- Two sources newest first, merged newest first.
local function merged(a, b)
  local out, i, j = {}, 1, 1
  while i <= #a and j <= #b do
    if below(b[j], a[i]) then
      out[#out + 1] = a[i]
      i = i + 1
    else
      out[#out + 1] = b[j]
      j = j + 1
    end
  end
  for k = i, #a do
    out[#out + 1] = a[k]
  end
  for k = j, #b do
    out[#out + 1] = b[k]
  end
  return out
end
local candidates = {}
local listCount = 0
for _, id in ipairs(redis.call("ZREVRANGEBYSCORE", KEYS[1], ARGV[1], ARGV[2], "LIMIT", 0, ARGV[3])) do
  if listCount < window and id ~= "0" and (before == "" or below(id, before)) and (since == "" or below(since, id)) then
    listCount = listCount + 1
    take(candidates, id)
  end
end
for author in string.gmatch(pulled, "%d+") do
  -- One call per author: an empty answer is a list not cached (a cached one holds its marker
  -- or ids) — or one with nothing below the cursor, which the slow way settles too.
  local ids = redis.call("ZREVRANGEBYSCORE", prefix .. "cr:{" .. author .. "}", ARGV[1], "-inf", "LIMIT", 0, ARGV[3] + 1)
  if #ids == 0 then
    return { 0 }
  end
  local got, complete, authorIds = 0, false, {}
  for _, id in ipairs(ids) do
    if id == "0" then
      complete = true
    elseif got < window and (before == "" or below(id, before)) then
      got = got + 1
      take(authorIds, id)
    end
  end
  if got < window and not complete then
    return { 0 }
  end
  candidates = merged(candidates, authorIds)
end
-- Each source came newest first by score; ids that share a millisecond are ordered by their text,
-- which is their number's order unless their lengths differ: then, and only then, a full sort.
for i = 2, #candidates do
  if below(candidates[i - 1], candidates[i]) then
    table.sort(candidates, function(a, b)
      return below(b, a)
    end)
    break
  end
end
local hiddenSet = {}
for author in string.gmatch(hidden, "%d+") do
  hiddenSet[author] = true
end
local limit = tonumber(ARGV[7])
local state = 1
if redis.call("EXISTS", KEYS[2]) == 1 then
  state = 2
end
local posts, firstId, lastId = {}, "", ""
local page, nextIndex, round = 0, 1, 0
-- The slow way's rounds: each looks at up to twice the posts still missing. Here a round's bodies
-- are fetched as the page needs them (one MGET of as many as are missing), so a page with nothing
-- hidden reads only its own bodies: the same page, half the bodies read.
while round < 4 and page < limit and nextIndex <= #candidates do
  local last = math.min(nextIndex + (limit - page) * 2 - 1, #candidates)
  local i = nextIndex
  while i <= last and page < limit do
    local upto = math.min(i + limit - page - 1, last)
    local names = {}
    for j = i, upto do
      names[j - i + 1] = prefix .. "pa:{" .. candidates[j] .. "}"
    end
    local bodies = redis.call("MGET", unpack(names))
    for j = i, upto do
      local body = bodies[j - i + 1]
      -- Not cached, being edited ("D") or leased to a reader filling it ("L…"): the slow way.
      if not body or not string.match(body, "^%d") then
        return { 0 }
      end
      local author, json = string.match(body, "^%d+|(%d+)|(.*)$")
      if author and not hiddenSet[author] then
        page = page + 1
        posts[page] = json
        if page == 1 then
          firstId = candidates[j]
        end
        lastId = candidates[j]
      end
    end
    i = upto + 1
  end
  nextIndex = last + 1
  round = round + 1
end
return { 1, state, listCount, page, firstId, lastId, table.concat(posts, ",") }
