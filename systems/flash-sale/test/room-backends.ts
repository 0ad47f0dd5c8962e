/**
 * The two engines of the waiting room for its contract suite: the in-process rooms on a
 * ManualClock, and the Redis room scripts under a key prefix of its own (keys deleted at
 * close). Redis decides on its own clock, so `passMs` waits for Redis TIME there — and that
 * clock runs on while a loaded host stalls this process, so the Redis engine gets wider windows
 * (`slackMs`, a longer grace) than the manual clock, which moves only when a case moves it.
 */
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import type { Backend } from "@casebook/lab/contract-suite";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import type { RoomPort } from "../src/domain/room-port.ts";
import type { WaitingRoomConfig } from "../src/domain/waiting-room.ts";
import { InProcessRooms } from "../src/store/in-process-rooms.ts";
import { RedisRooms, roomIncludesDir, roomKeys, roomScriptsDir } from "../src/store/redis-rooms.ts";

export const ROOM_CONFIG: WaitingRoomConfig = {
  admitPerS: 1_000,
  maxActive: 3,
  graceMs: 400,
  sessionMs: 60_000,
  maxEntrants: 50,
};

/**
 * Redis: the grace is `slackMs` plus a 500 ms beat, so a case's calls may land up to ~1 s late on
 * Redis TIME (a stalled event loop, a loaded CI host) and admitted entrants still hold their slots.
 */
const REDIS_ROOM_CONFIG: WaitingRoomConfig = { ...ROOM_CONFIG, graceMs: 1_500 };

export interface RoomHarness {
  readonly rooms: RoomPort;
  /** The settings `rooms` runs with. */
  readonly config: WaitingRoomConfig;
  /**
   * How late on the engine's clock a case's next call may land and the case still holds: an
   * opening scheduled this far ahead, a heartbeat this far inside the grace.
   */
  readonly slackMs: number;
  /** A sale id unique to the calling case. */
  sale(name: string): string;
  /** The engine's clock now (ManualClock, or Redis TIME). */
  nowMs(): Promise<number>;
  passMs(ms: number): Promise<void>;
}

export const inProcessRooms: Backend<RoomHarness> = {
  name: "in-process",
  open: async () => {
    const clock = new ManualClock(1_700_000_000_000);
    let next = 0;
    const subject: RoomHarness = {
      rooms: new InProcessRooms({ config: ROOM_CONFIG, clock, random: seededRandom("rooms"), maxRooms: 100 }),
      config: ROOM_CONFIG,
      slackMs: 200,
      sale: (name) => `${name}-${next++}`,
      nowMs: async () => clock.nowMs(),
      passMs: async (ms) => clock.advance(ms),
    };
    return { subject, close: async () => {} };
  },
};

export const redisRooms: Backend<RoomHarness> = {
  name: "redis",
  open: async (t) => {
    const url = await requireRedis(t);
    if (!url) return undefined;
    const registry = await ScriptRegistry.fromDir(roomScriptsDir, { includesDir: roomIncludesDir });
    const redis = await connectRedis({
      url,
      keyPrefix: `${uniqueName("fs:room")}:`,
      commandTimeoutMs: 5_000,
    });
    const sales: string[] = [];
    const nowMs = async () => {
      const [s, us] = (await redis.time()) as [string | number, string | number];
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const subject: RoomHarness = {
      rooms: new RedisRooms(new RedisScriptRunner(redis, registry), REDIS_ROOM_CONFIG),
      config: REDIS_ROOM_CONFIG,
      slackMs: 1_000,
      sale: (name) => {
        const id = `${name}-${sales.length}`;
        sales.push(id);
        return id;
      },
      nowMs,
      passMs: async (ms) => {
        const target = (await nowMs()) + ms;
        while ((await nowMs()) <= target) await new Promise((r) => setTimeout(r, 10));
      },
    };
    const close = async () => {
      for (const id of sales) await redis.del(...roomKeys(id));
      await closeRedis(redis);
    };
    return { subject, close };
  },
};
