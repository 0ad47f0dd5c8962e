/**
 * A reader's view — the followees they pull (above the tier line) and the authors they muted
 * or blocked — cached in Redis (or the in-process twin) as `rv:{user}` = "epoch|line|pulled,…|hidden,…",
 * so a warm read needs no graph query. It is the graph's read side for the feed: a miss asks
 * the graph (one query) and fills.
 *
 * Invalidation, and why a stale fill cannot win:
 * - the reader's own follow, unfollow, mute or unmute (`invalidate`, after the commit) deletes
 *   the view and bumps `rvv:{user}`; a fill carries the version its miss saw and is refused
 *   when it moved — so a fill that read the graph before the change never lands after it;
 * - an author crossing the tier line (`bumpEpoch`) changes who is pulled for all of their
 *   followers at once: the global epoch `rv:epoch` moves, and every view made at another
 *   epoch stops being valid (and every fill that saw the old epoch is refused);
 * - a view made at another line (a process configured with other thresholds) is not used.
 * When an invalidation is lost (Redis unreachable after the commit) the view stays until its
 * TTL (`ttlMs`) — the bound on how late a follow or mute shows then. A Redis that is
 * unreachable on the read side makes reads ask the graph.
 *
 * @example
 * const views = new ReaderViews(runner, graph, { ttlMs: 300_000 });
 * await views.readerView(42n, 100_000); // { pulled, hidden }
 * await views.invalidate(42n); // after 42 follows someone
 */
import type { ScriptRunner } from "@casebook/infra/redis/script-runner";
import type { GraphReader, ReaderView } from "../domain/ports.ts";

export interface ReaderViewsOptions {
  /** How long a view is kept: the bound on a lost invalidation. */
  readonly ttlMs: number;
  /** True for an error meaning Redis is unreachable: the read then asks the graph. */
  readonly isStoreDown?: (error: unknown) => boolean;
}

/** How long a view's version outlives its last change: far beyond any fill's graph read. */
const VERSION_TTL_MS = 86_400_000;

export const viewKey = (userId: bigint): string => `rv:{${userId}}`;
export const viewVersionKey = (userId: bigint): string => `rvv:{${userId}}`;
export const VIEW_EPOCH_KEY = "rv:epoch";

/** "epoch|line|pulled,…|hidden,…" */
export function encodeView(epoch: string, line: number, view: ReaderView): string {
  return `${epoch}|${line}|${view.pulled.join(",")}|${[...view.hidden].join(",")}`;
}

export function decodeView(text: string): ReaderView {
  const [, , pulled = "", hidden = ""] = text.split("|");
  const ids = (csv: string) => (csv === "" ? [] : csv.split(",").map(BigInt));
  return { pulled: ids(pulled), hidden: new Set(ids(hidden)) };
}

export class ReaderViews implements GraphReader {
  readonly #runner: ScriptRunner;
  readonly #graph: GraphReader;
  readonly #o: ReaderViewsOptions;

  constructor(runner: ScriptRunner, graph: GraphReader, options: ReaderViewsOptions) {
    this.#runner = runner;
    this.#graph = graph;
    this.#o = options;
  }

  async readerView(userId: bigint, minFollowers: number): Promise<ReaderView> {
    const keys = [viewKey(userId), viewVersionKey(userId), VIEW_EPOCH_KEY];
    let reply: [number, string, string?];
    try {
      reply = (await this.#runner.run("view-read", keys, [minFollowers])) as [number, string, string?];
    } catch (error) {
      if (this.#o.isStoreDown?.(error)) return this.#graph.readerView(userId, minFollowers);
      throw error;
    }
    if (reply[0] === 1) return decodeView(reply[1]);
    const [, version, epoch = "0"] = reply;
    const view = await this.#graph.readerView(userId, minFollowers);
    // A refused or failed fill costs only the next read's miss.
    await this.#runner
      .run("view-fill", keys, [version, epoch, encodeView(epoch, minFollowers, view), this.#o.ttlMs])
      .catch(() => 0);
    return view;
  }

  /** After the reader's follow, unfollow, mute or unmute committed. */
  async invalidate(userId: bigint): Promise<void> {
    await this.#runner.run("view-invalidate", [viewKey(userId), viewVersionKey(userId)], [VERSION_TTL_MS]);
  }

  /** After an author crossed the tier line: every view stops being valid. */
  async bumpEpoch(): Promise<void> {
    await this.#runner.run("view-epoch-bump", [VIEW_EPOCH_KEY], []);
  }
}
