/**
 * Presence pushed to the sockets that watch a conversation (CH-16; `domain/presence.ts` says
 * where the pokes come from). A socket asks `presence {chatId, watch: true}`: the send service
 * checks membership and answers the members' presence; from then on this gateway listens to
 * those users' pokes and, after each, reads the session table and pushes
 * `presence-changed {users}` to every socket watching a user whose devices changed — once per
 * change, whichever socket or conversation watches them. Per gateway, not per socket: a user
 * watched by 300 sockets here is one subscription, one read per poke.
 *
 * A poke read in the same turn as others shares their read (one session-table lookup). Each
 * heartbeat, every watched user is read again (in slices): that catches what no poke announces
 * — a SIGKILLed gateway's users, whose rows just expire — and a poke pub/sub lost.
 *
 * Bounds: MAX_PRESENCE_WATCHES conversations per socket (the one on screen and a few more; a
 * group has ≤ 1,024 members, a channel none: the send service refuses it). Membership is the
 * one read at the watch: a member added later is watched from the next `watch`.
 *
 * @example
 * const watch = new PresenceWatch({ bus, sessions, nowMs, push: (id, frame) => …, onError });
 * await watch.watch(connectionId, chatId, answer.users); // then presence-changed frames
 * watch.forget(connectionId);                            // the socket closed
 */
import { type PresenceBus, presenceOf, type UserPresence } from "../domain/presence.ts";
import type { SessionTable } from "../domain/sessions.ts";
import { errors } from "../errors.ts";

/** Conversations one socket may watch at once. */
export const MAX_PRESENCE_WATCHES = 4;
/** Users read in one session-table lookup. */
export const PRESENCE_READ_SLICE = 1_024;

export interface PresenceWatchOptions {
  readonly bus: PresenceBus;
  readonly sessions: SessionTable;
  readonly nowMs: () => number;
  /** Writes a frame to one of this gateway's sockets (nothing when it is gone). */
  readonly push: (connectionId: string, frame: Record<string, unknown>) => void;
  readonly onError: (err: unknown) => void;
}

export class PresenceWatch {
  readonly #options: PresenceWatchOptions;
  /** Per socket: the conversations it watches, with the members read at the watch. */
  readonly #bySocket = new Map<string, Map<string, readonly string[]>>();
  /** Per watched user: the sockets watching it, with how many of their conversations do. */
  readonly #watchers = new Map<string, Map<string, number>>();
  /** Per watched user: its devices as last read (sorted, joined) — a change is pushed once. */
  readonly #known = new Map<string, string>();
  /** Users poked since the last read. */
  readonly #poked = new Set<string>();
  #readScheduled = false;
  readonly #listener = (userId: string) => this.#onPoke(userId);

  constructor(options: PresenceWatchOptions) {
    this.#options = options;
  }

  /** Users watched through this gateway now. */
  get watchedUsers(): number {
    return this.#watchers.size;
  }

  /**
   * Starts (or renews) `connectionId`'s watch of `chatId`, whose members' presence `users` the
   * send service just read. Listens first, then reads again: a change between the send
   * service's read and the subscription is pushed, not missed.
   */
  async watch(connectionId: string, chatId: string, users: readonly UserPresence[]): Promise<void> {
    const watches = this.#bySocket.get(connectionId) ?? new Map<string, readonly string[]>();
    if (!watches.has(chatId) && watches.size >= MAX_PRESENCE_WATCHES)
      throw errors.create("CHAT_PRESENCE_WATCHES", { fields: { field: "chatId", chatId } });
    const previous = watches.get(chatId);
    const members = users.map((u) => u.userId);
    watches.set(chatId, members);
    this.#bySocket.set(connectionId, watches);
    const fresh: string[] = [];
    for (const user of users) {
      const sockets = this.#watchers.get(user.userId) ?? new Map<string, number>();
      if (sockets.size === 0) {
        fresh.push(user.userId);
        this.#known.set(user.userId, user.devices.join(","));
      }
      sockets.set(connectionId, (sockets.get(connectionId) ?? 0) + 1);
      this.#watchers.set(user.userId, sockets);
    }
    if (previous) await this.#release(connectionId, previous);
    if (fresh.length === 0) return;
    try {
      await this.#options.bus.listen(this.#listener, fresh);
    } catch (err) {
      // Not subscribed (Redis unreachable): the watch is undone whole and the socket told so.
      await this.unwatch(connectionId, chatId).catch(() => {});
      throw err;
    }
    await this.#read(fresh);
  }

  /** Ends `connectionId`'s watch of `chatId` (nothing if it had none). */
  async unwatch(connectionId: string, chatId: string): Promise<void> {
    const watches = this.#bySocket.get(connectionId);
    const members = watches?.get(chatId);
    if (!watches || !members) return;
    watches.delete(chatId);
    if (watches.size === 0) this.#bySocket.delete(connectionId);
    await this.#release(connectionId, members);
  }

  /** The socket closed: all its watches end. */
  forget(connectionId: string): void {
    const watches = this.#bySocket.get(connectionId);
    if (!watches) return;
    this.#bySocket.delete(connectionId);
    const members = [...watches.values()].flat();
    this.#release(connectionId, members).catch((err: unknown) => this.#options.onError(err));
  }

  /** One heartbeat's re-read of every watched user (what no poke announces: rows that expired). */
  sweep(): Promise<void> {
    return this.#readSlices([...this.#watchers.keys()]);
  }

  async #release(connectionId: string, members: readonly string[]): Promise<void> {
    const unwatched: string[] = [];
    for (const userId of members) {
      const sockets = this.#watchers.get(userId);
      const count = sockets?.get(connectionId);
      if (!sockets || count === undefined) continue;
      if (count > 1) sockets.set(connectionId, count - 1);
      else sockets.delete(connectionId);
      if (sockets.size > 0) continue;
      this.#watchers.delete(userId);
      this.#known.delete(userId);
      unwatched.push(userId);
    }
    if (unwatched.length > 0) await this.#options.bus.unlisten(this.#listener, unwatched);
  }

  #onPoke(userId: string): void {
    if (!this.#watchers.has(userId)) return;
    this.#poked.add(userId);
    if (this.#readScheduled) return;
    this.#readScheduled = true;
    // The pokes of this turn share one read.
    setImmediate(() => {
      this.#readScheduled = false;
      const users = [...this.#poked];
      this.#poked.clear();
      this.#readSlices(users).catch((err: unknown) => this.#options.onError(err));
    });
  }

  async #readSlices(users: readonly string[]): Promise<void> {
    for (let i = 0; i < users.length; i += PRESENCE_READ_SLICE)
      await this.#read(users.slice(i, i + PRESENCE_READ_SLICE));
  }

  /** Reads `users`' presence and pushes each change to the sockets watching that user. */
  async #read(users: readonly string[]): Promise<void> {
    const rows = await this.#options.sessions.lookup(users, this.#options.nowMs());
    const changedFor = new Map<string, UserPresence[]>();
    for (const presence of presenceOf(users, rows)) {
      const sockets = this.#watchers.get(presence.userId);
      const devices = presence.devices.join(",");
      if (!sockets || this.#known.get(presence.userId) === devices) continue;
      this.#known.set(presence.userId, devices);
      for (const connectionId of sockets.keys()) {
        const list = changedFor.get(connectionId) ?? [];
        list.push(presence);
        changedFor.set(connectionId, list);
      }
    }
    for (const [connectionId, changed] of changedFor)
      this.#options.push(connectionId, { action: "presence-changed", users: changed });
  }
}
