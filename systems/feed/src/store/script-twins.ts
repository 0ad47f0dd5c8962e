/**
 * The in-process twins of `scripts/*.lua`: the same steps in the same order against infra's
 * InProcessKeyspace (the embedded engine). Read each beside its script; the timeline contract
 * suite (`test/timeline-store.contract.test.ts`) runs the same cases on both engines, so a
 * difference is a failing test. A twin is synchronous: nothing interleaves it, as nothing
 * interleaves a Lua script.
 */
import type { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import type { ScriptTwin } from "@casebook/infra/redis/script-runner";
import { readCacheTwins } from "./read-cache-twins.ts";

/** ZREMRANGEBYRANK key 0 (size - cap - 1): drops the oldest beyond the cap; returns the size after. */
function trimToCap(ks: InProcessKeyspace, key: string, cap: number): number {
  const size = ks.zcard(key);
  if (size <= cap) return size;
  ks.zrem(key, ...ks.zrange(key, 0, size - cap - 1));
  return cap;
}

const timelineAdd: ScriptTwin = (ks, [timeline], [id, score, cap]) => {
  if (!ks.exists(timeline!)) return -1;
  ks.zadd(timeline!, Number(score), id!);
  return trimToCap(ks, timeline!, Number(cap));
};

const timelineAddMany: ScriptTwin = (ks, timelines, [id, score, cap]) => {
  let written = 0;
  for (const timeline of timelines) {
    if (!ks.exists(timeline)) continue;
    ks.zadd(timeline, Number(score), id!);
    trimToCap(ks, timeline, Number(cap));
    written++;
  }
  return written;
};

const timelineRead: ScriptTwin = (ks, [timeline, lock], [max, min, count, ttlMs]) => {
  if (!ks.exists(timeline!)) return [0];
  ks.pexpire(timeline!, Number(ttlMs));
  // ZREVRANGEBYSCORE max min LIMIT 0 count
  const ids = ks.zrangeByScore(timeline!, min!, max!).reverse().slice(0, Number(count));
  return [ks.exists(lock!) ? 2 : 1, ...ids];
};

const rebuildBegin: ScriptTwin = (ks, [lock, timeline], [owner, lockMs, ttlMs]) => {
  if (!ks.set(lock!, owner!, { nx: true, pxMs: Number(lockMs) })) return 0;
  ks.zadd(timeline!, 0, "0");
  ks.pexpire(timeline!, Number(ttlMs));
  return 1;
};

const timelineFill: ScriptTwin = (ks, [timeline, lock], [owner, cap, ttlMs, entries]) => {
  if (ks.get(lock!) !== owner) return -1;
  for (const [, score, id] of entries!.matchAll(/(\d+):(\d+)/g)) ks.zadd(timeline!, Number(score), id!);
  ks.zadd(timeline!, 0, "0");
  const size = trimToCap(ks, timeline!, Number(cap));
  ks.pexpire(timeline!, Number(ttlMs));
  return size;
};

const rebuildEnd: ScriptTwin = (ks, [lock], [owner]) => (ks.get(lock!) === owner ? ks.del(lock!) : 0);

const timelineRemove: ScriptTwin = (ks, [timeline], [ids]) => {
  let removed = 0;
  for (const [id] of ids!.matchAll(/\d+/g)) removed += ks.zrem(timeline!, id);
  return removed;
};

const listAdd: ScriptTwin = (ks, [list], [id, cap]) => {
  ks.lpush(list!, id!);
  ks.ltrim(list!, 0, Number(cap) - 1);
  return ks.llen(list!);
};

const listRead: ScriptTwin = (ks, [list], [count]) => ks.lrange(list!, 0, Number(count) - 1);

const rankingSave: ScriptTwin = (ks, [ranking], [ttlMs, ids]) => {
  ks.del(ranking!);
  let n = 0;
  for (const [id] of ids!.matchAll(/\d+/g)) {
    ks.rpush(ranking!, id);
    n++;
  }
  if (n === 0) ks.rpush(ranking!, "0");
  ks.pexpire(ranking!, Number(ttlMs));
  return n;
};

const rankingPage: ScriptTwin = (ks, [ranking], [start, count]) => {
  if (!ks.exists(ranking!)) return [0];
  return [1, ...ks.lrange(ranking!, Number(start), Number(start) + Number(count) - 1)];
};

/** One twin per script of `scripts/` (the warm read's from read-cache-twins.ts), under the script's name (InProcessScriptRunner checks both ways). */
export const timelineTwins: Readonly<Record<string, ScriptTwin>> = {
  "timeline-add": timelineAdd,
  "timeline-add-many": timelineAddMany,
  "timeline-read": timelineRead,
  "rebuild-begin": rebuildBegin,
  "timeline-fill": timelineFill,
  "rebuild-end": rebuildEnd,
  "timeline-remove": timelineRemove,
  "list-add": listAdd,
  "list-read": listRead,
  "ranking-save": rankingSave,
  "ranking-page": rankingPage,
  ...readCacheTwins,
};
