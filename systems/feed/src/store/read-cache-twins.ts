/**
 * The in-process twins of the warm read's scripts (`scripts/home-read-4.lua`, `post-*`,
 * `celebrity-*`, `view-*`): the same steps in the same order against infra's
 * InProcessKeyspace. Read each beside its script; `test/read-cache.contract.test.ts` runs the
 * same cases on both engines. Keys a script reads by name (a pulled author's list, a post's
 * body) are found under the prefix of its first key, as the Lua does — "" here, where the
 * runner applies no prefix.
 *
 * @example
 * new InProcessScriptRunner({ registry, twins: { ...timelineTwins }, keyspace }); // includes these
 */
import type { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import type { ScriptTwin } from "@casebook/infra/redis/script-runner";

/** Decimal ids compared as Lua compares them: by length, then as strings. */
const below = (a: string, b: string): boolean => (a.length !== b.length ? a.length < b.length : a < b);

/** ZREVRANGEBYSCORE key max min LIMIT 0 count. */
const revRange = (ks: InProcessKeyspace, key: string, max: string, min: string, count: number): string[] =>
  ks.zrangeByScore(key, min, max).reverse().slice(0, count);

const postBodies: ScriptTwin = (ks, keys, [token, leaseMs]) =>
  keys.map((key) => {
    const value = ks.get(key);
    if (value !== null) return value;
    ks.set(key, `L${token}`, { pxMs: Number(leaseMs) });
    return "";
  });

const postFill: ScriptTwin = (ks, keys, [token, ttlMs, ...values]) => {
  let filled = 0;
  keys.forEach((key, i) => {
    if (ks.get(key) !== `L${token}`) return;
    ks.set(key, values[i]!, { pxMs: Number(ttlMs) });
    filled++;
  });
  return filled;
};

const postDirty: ScriptTwin = (ks, [body], [markerMs]) => {
  ks.set(body!, "D", { pxMs: Number(markerMs) });
  return 1;
};

const postWrite: ScriptTwin = (ks, [body], [version, value, ttlMs]) => {
  const cached = /^(\d+)\|/.exec(ks.get(body!) ?? "")?.[1];
  if (cached !== undefined && Number(cached) >= Number(version)) return 0;
  ks.set(body!, value!, { pxMs: Number(ttlMs) });
  return 1;
};

const celebrityRead: ScriptTwin = (ks, [list, version], [max, count]) => {
  if (!ks.exists(list!)) return [0, ks.get(version!) ?? "0"];
  const out: (string | number)[] = [1, 0];
  for (const id of revRange(ks, list!, max!, "-inf", Number(count) + 1)) {
    if (id === "0") out[1] = 1;
    else if (out.length - 2 < Number(count)) out.push(id);
  }
  return out;
};

const celebrityFill: ScriptTwin = (ks, [list, version], [seen, ttlMs, window, entries]) => {
  if ((ks.get(version!) ?? "0") !== seen || ks.exists(list!)) return 0;
  let n = 0;
  for (const [, score, id] of entries!.matchAll(/(\d+):(\d+)/g)) {
    ks.zadd(list!, Number(score), id!);
    n++;
  }
  if (n < Number(window)) ks.zadd(list!, 0, "0");
  ks.pexpire(list!, Number(ttlMs));
  return 1;
};

const celebrityAdd: ScriptTwin = (ks, [list, version], [id, score, window, versionTtlMs]) => {
  ks.incrBy(version!, 1);
  ks.pexpire(version!, Number(versionTtlMs));
  if (!ks.exists(list!)) return 0;
  ks.zadd(list!, Number(score), id!);
  const size = ks.zcard(list!);
  if (size > Number(window)) ks.zrem(list!, ...ks.zrange(list!, 0, size - Number(window) - 1));
  return 1;
};

const VIEW_SHAPE = /^(\d+)\|(\d+)\|([\d,]*)\|([\d,]*)$/;

const viewRead: ScriptTwin = (ks, [view, version, epochKey], [line]) => {
  const cached = ks.get(view!);
  const epoch = ks.get(epochKey!) ?? "0";
  if (cached !== null) {
    const [, vepoch, vline] = /^(\d+)\|(\d+)\|/.exec(cached) ?? [];
    if (vepoch === epoch && vline === line) return [1, cached];
  }
  return [0, ks.get(version!) ?? "0", epoch];
};

const viewFill: ScriptTwin = (ks, [view, version, epochKey], [seenVersion, seenEpoch, value, ttlMs]) => {
  if ((ks.get(version!) ?? "0") !== seenVersion || (ks.get(epochKey!) ?? "0") !== seenEpoch) return 0;
  ks.set(view!, value!, { pxMs: Number(ttlMs) });
  return 1;
};

const viewInvalidate: ScriptTwin = (ks, [view, version], [versionTtlMs]) => {
  const next = ks.incrBy(version!, 1);
  ks.pexpire(version!, Number(versionTtlMs));
  ks.del(view!);
  return next;
};

const viewEpochBump: ScriptTwin = (ks, [epochKey]) => ks.incrBy(epochKey!, 1);

const homeRead: ScriptTwin = (ks, [timeline, lock, viewKey, epochKey], argv) => {
  const [max, min, perSource, ttlMs, before, since, limitArg, windowArg, line, celebrities] = argv as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  if (!ks.exists(timeline!)) return [0];
  const view = ks.get(viewKey!);
  if (view === null) return [0];
  const [, vepoch, vline, pulled, hidden] = VIEW_SHAPE.exec(view) ?? [];
  if (vepoch !== (ks.get(epochKey!) ?? "0") || vline !== line) return [0];
  if (pulled !== "" && celebrities !== "1") return [0];
  const prefix = /^(.*?)tl:\{\d+\}$/.exec(timeline!)![1]!;
  const window = Number(windowArg);
  ks.pexpire(timeline!, Number(ttlMs));
  const seen = new Set<string>();
  const candidates: string[] = [];
  const take = (id: string) => {
    if (since !== "" && !below(since, id)) return;
    if (!seen.has(id)) {
      seen.add(id);
      candidates.push(id);
    }
  };
  let listCount = 0;
  for (const id of revRange(ks, timeline!, max, min, Number(perSource)))
    if (
      listCount < window &&
      id !== "0" &&
      (before === "" || below(id, before)) &&
      (since === "" || below(since, id))
    ) {
      listCount++;
      take(id);
    }
  for (const [author] of (pulled ?? "").matchAll(/\d+/g)) {
    // One call per author: an empty answer is a list not cached (or nothing below the cursor).
    const ids = revRange(ks, `${prefix}cr:{${author}}`, max, "-inf", Number(perSource) + 1);
    if (ids.length === 0) return [0];
    let got = 0;
    let complete = false;
    for (const id of ids)
      if (id === "0") complete = true;
      else if (got < window && (before === "" || below(id, before))) {
        got++;
        take(id);
      }
    if (got < window && !complete) return [0];
  }
  candidates.sort((a, b) => (below(b, a) ? -1 : below(a, b) ? 1 : 0));
  const hiddenSet = new Set((hidden ?? "").match(/\d+/g) ?? []);
  const limit = Number(limitArg);
  const state = ks.exists(lock!) ? 2 : 1;
  const posts: string[] = [];
  let first = "";
  let lastId = "";
  let page = 0;
  let next = 0;
  for (let round = 0; round < 4 && page < limit && next < candidates.length; round++) {
    const last = Math.min(next + (limit - page) * 2, candidates.length);
    for (let i = next; i < last && page < limit; i++) {
      const body = ks.get(`${prefix}pa:{${candidates[i]}}`);
      // Not cached, being edited ("D") or leased to a reader filling it ("L…"): the slow way.
      if (body === null || !/^\d/.test(body)) return [0];
      const [, author, json] = /^\d+\|(\d+)\|(.*)$/s.exec(body) ?? [];
      if (author !== undefined && !hiddenSet.has(author)) {
        page++;
        posts.push(json!);
        if (page === 1) first = candidates[i]!;
        lastId = candidates[i]!;
      }
    }
    next = last;
  }
  return [1, state, listCount, page, first, lastId, posts.join(",")];
};

/** One twin per warm-read script, under the script's name. */
export const readCacheTwins: Readonly<Record<string, ScriptTwin>> = {
  "home-read": homeRead,
  "post-bodies": postBodies,
  "post-fill": postFill,
  "post-dirty": postDirty,
  "post-write": postWrite,
  "celebrity-read": celebrityRead,
  "celebrity-fill": celebrityFill,
  "celebrity-add": celebrityAdd,
  "view-read": viewRead,
  "view-fill": viewFill,
  "view-invalidate": viewInvalidate,
  "view-epoch-bump": viewEpochBump,
};
