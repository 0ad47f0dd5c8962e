/**
 * The bench's load generator, a process of its own (never sharing an event loop with a
 * server it measures). bench/main.ts runs several (`--load-processes`), each holding its
 * share of one side's clients — chat's raw WebSocket protocol, socket.io-client or the
 * `centrifuge` 2.x client (Centrifuge's protocol v1, on `ws`) — so
 * that decoding every delivery is spread over processes and the generator is not what
 * caps the faster side. It speaks JSON lines with bench/main.ts over stdin/stdout:
 *
 *   → {"cmd":"connect", side, urls, clients: [{index, token?, rooms}], connectPerS}
 *   ← {"connected": n, "failed": m}
 *   → {"cmd":"run", groups: [{target, members}], directs: [{target, members}], directShare, ratePerS, durationMs, warmupMs, drainMs, seed, startAtEpochMs}
 *   ← {"sent", "acked", "errors", "expected", "delivered", "windowMs", "latencyBuckets", "stillConnected"}
 *   → {"cmd":"arm", clients: [index…], boundMs}    these clients reconnect when their socket drops
 *   ← {"armed": n}
 *   → {"cmd":"await-resume", fromEpochMs}          (their server was crashed and restarted meanwhile)
 *   ← {"armed", "resumed", "recovered", "resumeMs": [ms from fromEpochMs, one per resumed client]}
 *   → {"cmd":"close"}
 *
 * Sends are open loop: message i is due at start + i / rate whatever the servers do, and its
 * body carries that intended time (epoch ms: every process on the machine reads the same
 * clock), so a recipient's latency (send → deliver) includes any stall instead of hiding it.
 * Every process draws the SAME schedule from the run's seed — message i goes to a 1:1
 * conversation or a group (`directShare`), conversation c_i, from member m_i — and sends the
 * messages whose sender it holds; each counts as expected
 * the deliveries to the clients it holds, so the sums over processes are one generator's.
 */
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { Histogram, type HistogramBucket } from "@casebook/kit/histogram";
import { seededRandom, systemRandom } from "@casebook/kit/random";
import Centrifuge from "centrifuge";
import { io, type Socket } from "socket.io-client";
import WebSocket from "ws";
import { ReconnectSchedule } from "../src/client/reconnect-schedule.ts";

export type Side = "chat" | "socketio" | "centrifuge";

export interface ConnectCommand {
  cmd: "connect";
  side: Side;
  urls: string[];
  /** This process's share; `index` is the client's place in the whole population. */
  clients: { index: number; token?: string; rooms: string[] }[];
  connectPerS: number;
}

export interface RunCommand {
  cmd: "run";
  groups: { target: string; members: number[] }[];
  /** 1:1 conversations; a message goes to one of them with probability `directShare`. */
  directs: { target: string; members: number[] }[];
  directShare: number;
  ratePerS: number;
  durationMs: number;
  warmupMs: number;
  drainMs: number;
  /** Every process of a run draws the same schedule from it. */
  seed: number;
  /** When message 0 is due, the same instant for every process. */
  startAtEpochMs: number;
}

export interface ArmCommand {
  cmd: "arm";
  /** Clients (population indexes) this process holds that reconnect, each as its side's client does. */
  clients: number[];
  /** How long after arming a client may take to resume; past it, it counts as not resumed. */
  boundMs: number;
}

export interface AwaitResumeCommand {
  cmd: "await-resume";
  /** The restarted server's ready time: resume times are measured from it. */
  fromEpochMs: number;
}

/**
 * Resumed: chat — reconnected with the user's token and one `sync` per conversation after the
 * last seq it saw, every one answered (what the client library does, CH-14); socket.io —
 * reconnected by its manager (its own backoff) and either recovered (connection-state
 * recovery) or back in its rooms (`join`, acknowledged); Centrifuge — reconnected by the
 * client library (its own backoff) and every channel subscribed again, each answer saying
 * whether what the client missed was recovered from the channel's history.
 */
export interface ResumeResult {
  armed: number;
  resumed: number;
  /**
   * socket.io clients whose connection state was recovered (`socket.recovered`); Centrifuge
   * clients every channel of which was recovered from its history; 0 on chat.
   */
  recovered: number;
  resumeMs: number[];
}

/** When one client resumed, and whether its state came back by recovery. */
type Resumed = { atMs: number; recovered: boolean } | undefined;

/** What one process's share of a run and a whole run both count. */
export interface RunCounts {
  sent: number;
  acked: number;
  errors: number;
  /** Error frames by code, and "not connected" for a send on a closed client. */
  errorCodes: Record<string, number>;
  expected: number;
  /**
   * Of `expected`, the deliveries of the measured sends that were refused (an error frame, or no
   * socket): a refused message was never accepted, so its recipients are owed nothing.
   */
  refusedExpected: number;
  delivered: number;
  stillConnected: number;
}

/** One process's share of a run. */
export interface ChildRunResult extends RunCounts {
  /** From the measure window's start to the end of sending or the last delivery, whichever is later. */
  windowMs: number;
  /** Send → deliver, in µs, to merge across processes. */
  latencyBuckets: HistogramBucket[];
}

/** A run over every process, as bench/main.ts reports it. */
export interface RunResult extends RunCounts {
  deliveredPerS: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
}

interface BenchClient {
  /** `ref` comes back on the send's answer (chat's `sent`/`error` frames; socket.io's ack). */
  send(target: string, body: string, ref: number): void;
  connected(): boolean;
  close(): void;
  /** Chat only: any frame of the protocol, as JSON. */
  sendFrame?(frame: object): void;
  /**
   * From now on, reconnect when the socket drops (chat: `chats` synced after their last seq);
   * resolves when resumed, or undefined at `deadlineMs` (epoch).
   */
  armResume?(chats: readonly string[], deadlineMs: number): Promise<Resumed>;
}

interface Events {
  onAck(ok: boolean, code: string | undefined, ref: number): void;
  onMessage(body: string, client: number): void;
}

/** Wall-clock ms with performance.now()'s resolution: comparable across processes. */
function epochNowMs(): number {
  return performance.timeOrigin + performance.now();
}

const CONNECT_TIMEOUT_MS = 15_000;
const TICK_MS = 2;
/** Body padding so a message weighs about what CH-02 assumes (~200 B with its metadata). */
const PADDING = "x".repeat(64);

/** A chat client's memory across its connections: the last seq seen per conversation. */
type LastSeqs = Map<string, string>;

function chatClient(
  url: string,
  token: string,
  index: number,
  events: Events,
  lastSeq: LastSeqs = new Map(),
  onHistory?: (ref: string | undefined) => void,
): Promise<BenchClient> {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}/v1/socket?token=${encodeURIComponent(token)}`, {
    perMessageDeflate: false,
    handshakeTimeout: CONNECT_TIMEOUT_MS,
  });
  const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
  ws.on("message", (data) => {
    const frame = JSON.parse(String(data)) as {
      action: string;
      message?: { body: string; chatId?: string; seq?: string };
      code?: string;
      ref?: string;
    };
    const ref = Number(frame.ref ?? -1);
    if (frame.action === "message" && frame.message) {
      const { chatId, seq } = frame.message;
      if (chatId !== undefined && seq !== undefined) lastSeq.set(chatId, seq);
      events.onMessage(frame.message.body, index);
    } else if (frame.action === "sent") events.onAck(true, undefined, ref);
    else if (frame.action === "error") {
      if (onHistory !== undefined && frame.ref?.startsWith("sync-")) onHistory(frame.ref);
      else events.onAck(false, frame.code, ref);
    } else if (frame.action === "history") onHistory?.(frame.ref);
  });
  const client: BenchClient = {
    send: (target, body, ref) => {
      if (ws.readyState !== WebSocket.OPEN) return events.onAck(false, "not connected", ref);
      // A frame's ref is a string (src/domain/frames.ts).
      ws.send(
        JSON.stringify({ action: "send", ref: String(ref), chatId: target, clientMsgId: randomUUID(), body }),
      );
    },
    connected: () => ws.readyState === WebSocket.OPEN,
    close: () => ws.terminate(),
    sendFrame: (frame) => ws.send(JSON.stringify(frame)),
    async armResume(chats, deadlineMs) {
      await closed;
      const schedule = new ReconnectSchedule({ baseMs: 250, capMs: 30_000, random: systemRandom });
      while (epochNowMs() < deadlineMs) {
        await sleep(schedule.nextDelayMs());
        const answered = new Set<string>();
        let allAnswered = () => {};
        const synced = new Promise<void>((resolve) => {
          allAnswered = resolve;
        });
        const onSync = (ref: string | undefined) => {
          if (ref !== undefined) answered.add(ref);
          if (answered.size >= chats.length) allAnswered();
        };
        try {
          const again = await chatClient(url, token, index, events, lastSeq, onSync);
          client.send = again.send;
          client.connected = again.connected;
          client.close = again.close;
          if (chats.length === 0) allAnswered();
          chats.forEach((chatId, k) => {
            const after = lastSeq.get(chatId) ?? "0";
            again.sendFrame?.({ action: "sync", ref: `sync-${k}`, chatId, after, limit: 1 });
          });
          const left = deadlineMs - epochNowMs();
          const done = await Promise.race([
            synced.then(() => true),
            sleep(Math.max(0, left)).then(() => false),
          ]);
          return done ? { atMs: epochNowMs(), recovered: false } : undefined;
        } catch {
          // refused or reset while the gateway starts: the next attempt after the backoff
        }
      }
      return undefined;
    },
  };
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(client));
    ws.once("error", reject);
    ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
  });
}

function socketIoClient(url: string, rooms: string[], index: number, events: Events): Promise<BenchClient> {
  const socket: Socket = io(url, {
    transports: ["websocket"],
    reconnection: false,
    timeout: CONNECT_TIMEOUT_MS,
    forceNew: true,
  });
  socket.on("message", (body: string) => events.onMessage(body, index));
  const client: BenchClient = {
    send: (target, body, ref) => {
      if (!socket.connected) return events.onAck(false, "not connected", ref);
      socket.emit("send", { room: target, body }, () => events.onAck(true, undefined, ref));
    },
    connected: () => socket.connected,
    close: () => socket.disconnect(),
    armResume(_chats, deadlineMs) {
      // socket.io's own reconnection (its manager's backoff: 1 s ± 50%, up to 5 s), as its users run it.
      socket.io.reconnection(true);
      return new Promise<Resumed>((resolve) => {
        const timer = setTimeout(() => resolve(undefined), Math.max(0, deadlineMs - epochNowMs()));
        socket.once("disconnect", () => {
          socket.once("connect", () => {
            const done = (recovered: boolean) => {
              clearTimeout(timer);
              resolve({ atMs: epochNowMs(), recovered });
            };
            if (socket.recovered) done(true);
            else socket.emit("join", rooms, () => done(false));
          });
        });
      });
    },
  };
  return new Promise((resolve, reject) => {
    socket.once("connect_error", reject);
    socket.once("connect", () => {
      socket.emit("join", rooms, () => resolve(client));
    });
  });
}

/** The client library's reconnect backoff (its defaults, named): 1–2 s, doubling to 20 s, ±50% jitter. */
const CENTRIFUGE_MIN_RETRY_MS = 1_000;
const CENTRIFUGE_MAX_RETRY_MS = 20_000;

/**
 * A `centrifuge` 2.x client on bench/centrifuge-server: the user in the connect data, one
 * subscription per room (sent in one batch once connected), a publish per send (acked when its
 * promise resolves) and a delivery per `publish` event. Like socket.io's, it does not reconnect
 * until armed: an unarmed client whose socket drops stays down, so only the armed clients load
 * the restarted server.
 */
function centrifugeClient(url: string, rooms: string[], index: number, events: Events): Promise<BenchClient> {
  const centrifuge = new Centrifuge(`${url.replace(/^http/, "ws")}/connection/websocket`, {
    websocket: WebSocket,
    // The bound on every call (connect, subscribe, publish): socket.io's connect bound.
    timeout: CONNECT_TIMEOUT_MS,
    minRetry: CENTRIFUGE_MIN_RETRY_MS,
    maxRetry: CENTRIFUGE_MAX_RETRY_MS,
  });
  centrifuge.setConnectData({ user: `u${index}` });
  let armed = false;
  // The subscribe answers since the last (re)connect: the client is in its rooms once all came.
  let answered = new Set<string>();
  let recoveredAll = true;
  let onJoined = (_recovered: boolean) => {};
  let onFailed = (_reason: string) => {};
  const joined = () => {
    if (answered.size >= rooms.length) onJoined(recoveredAll);
  };
  for (const room of rooms) {
    centrifuge.subscribe(room, {
      publish: (ctx) => events.onMessage(ctx.data as string, index),
      subscribe: (ctx) => {
        answered.add(room);
        recoveredAll &&= ctx.recovered;
        joined();
      },
      error: (ctx) => onFailed(`subscribe ${room}: ${ctx.message}`),
    });
  }
  if (rooms.length === 0) centrifuge.on("connect", joined);
  centrifuge.on("disconnect", (ctx: { reason: string }) => {
    answered = new Set();
    recoveredAll = true;
    onFailed(`disconnected: ${ctx.reason}`);
    if (!armed) centrifuge.disconnect();
  });
  const client: BenchClient = {
    send: (target, body, ref) => {
      if (!centrifuge.isConnected()) return events.onAck(false, "not connected", ref);
      centrifuge.publish(target, body).then(
        () => events.onAck(true, undefined, ref),
        (error: { code?: number; message?: string }) => events.onAck(false, error.message ?? "unknown", ref),
      );
    },
    connected: () => centrifuge.isConnected(),
    close: () => centrifuge.disconnect(),
    armResume(_chats, deadlineMs) {
      // The client library's own reconnect and resubscribe, each subscribe asking to recover
      // the channel from the offset and epoch it last saw.
      armed = true;
      return new Promise<Resumed>((resolve) => {
        const timer = setTimeout(() => resolve(undefined), Math.max(0, deadlineMs - epochNowMs()));
        centrifuge.once("disconnect", () => {
          onJoined = (recovered) => {
            onJoined = () => {};
            clearTimeout(timer);
            resolve({ atMs: epochNowMs(), recovered });
          };
        });
      });
    },
  };
  return new Promise((resolve, reject) => {
    // A handshake that never completes fails too (the library would wait on the socket).
    const timer = setTimeout(() => onFailed("not connected and subscribed in time"), CONNECT_TIMEOUT_MS);
    const settle = () => {
      clearTimeout(timer);
      onJoined = () => {};
      onFailed = () => {};
    };
    onJoined = () => {
      settle();
      resolve(client);
    };
    onFailed = (reason) => {
      settle();
      centrifuge.disconnect();
      reject(new Error(reason));
    };
    centrifuge.connect();
  });
}

export function latencyHistogram(): Histogram {
  return new Histogram({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000 });
}

class LoadState implements Events {
  /** The clients this process holds, by their index in the population. */
  clients = new Map<number, BenchClient>();
  histogram = latencyHistogram();
  measureFromMs = Number.POSITIVE_INFINITY;
  acked = 0;
  errors = 0;
  errorCodes: Record<string, number> = {};
  delivered = 0;
  lastDeliveryMs = 0;
  /** Measured sends awaiting their answer: ref → their recipients over every process. */
  awaiting = new Map<number, number>();
  refusedExpected = 0;
  nextRef = 0;
  /** Each client's conversations, from the last run's groups and 1:1 conversations. */
  chatsOf = new Map<number, string[]>();
  /** The armed clients' resumptions. */
  resuming: Promise<Resumed>[] = [];

  /** A new run counts from zero; late deliveries of the last run fall before its measure window. */
  reset(measureFromMs: number): void {
    this.histogram.reset();
    this.measureFromMs = measureFromMs;
    this.acked = 0;
    this.errors = 0;
    this.errorCodes = {};
    this.delivered = 0;
    this.lastDeliveryMs = 0;
    this.awaiting.clear();
    this.refusedExpected = 0;
  }

  onAck(ok: boolean, code: string | undefined, ref: number): void {
    const recipients = this.awaiting.get(ref);
    this.awaiting.delete(ref);
    if (ok) this.acked += 1;
    else {
      this.errors += 1;
      this.errorCodes[code ?? "unknown"] = (this.errorCodes[code ?? "unknown"] ?? 0) + 1;
      this.refusedExpected += recipients ?? 0;
    }
  }

  onMessage(body: string, client: number): void {
    const { t, s } = JSON.parse(body) as { t: number; s: number };
    if (s === client || t < this.measureFromMs) return;
    const now = epochNowMs();
    this.histogram.record(Math.max(0, Math.round((now - t) * 1_000)));
    this.delivered += 1;
    this.lastDeliveryMs = now;
  }
}

async function connectAll(
  state: LoadState,
  command: ConnectCommand,
): Promise<{ connected: number; failed: number }> {
  const perTick = Math.max(1, Math.round(command.connectPerS / 10));
  let failed = 0;
  for (let start = 0; start < command.clients.length; start += perTick) {
    const batch = command.clients.slice(start, start + perTick);
    const begun = performance.now();
    const made = await Promise.allSettled(
      batch.map((spec) => {
        const url = command.urls[spec.index % command.urls.length]!;
        if (command.side === "chat") return chatClient(url, spec.token!, spec.index, state);
        return command.side === "socketio"
          ? socketIoClient(url, spec.rooms, spec.index, state)
          : centrifugeClient(url, spec.rooms, spec.index, state);
      }),
    );
    made.forEach((result, offset) => {
      const { index } = batch[offset]!;
      if (result.status === "fulfilled") state.clients.set(index, result.value);
      else {
        failed += 1;
        state.clients.set(index, {
          send: (_target, _body, ref) => state.onAck(false, "not connected", ref),
          connected: () => false,
          close: () => {},
        });
      }
    });
    await sleep(Math.max(0, 100 - (performance.now() - begun)));
  }
  // This command's clients only: connect may come more than once (the bench connects in halves).
  return { connected: command.clients.length - failed, failed };
}

async function run(state: LoadState, command: RunCommand): Promise<ChildRunResult> {
  const periodMs = 1_000 / command.ratePerS;
  const total = Math.floor((command.durationMs / 1_000) * command.ratePerS);
  const schedule = seededRandom(command.seed);
  // Members of each conversation this process holds: its expected deliveries per message.
  const held = (targets: RunCommand["groups"]) =>
    targets.map((g) => g.members.filter((m) => state.clients.has(m)).length);
  const kinds = [
    { targets: command.groups, held: held(command.groups) },
    { targets: command.directs, held: held(command.directs) },
  ] as const;
  state.chatsOf.clear();
  for (const target of [...command.groups, ...command.directs]) {
    for (const member of target.members) {
      if (!state.clients.has(member)) continue;
      const chats = state.chatsOf.get(member) ?? [];
      chats.push(target.target);
      state.chatsOf.set(member, chats);
    }
  }
  const t0 = command.startAtEpochMs;
  state.reset(t0 + command.warmupMs);
  let sent = 0;
  let expected = 0;
  let next = 0;
  while (next < total) {
    const now = epochNowMs();
    for (; next < total && t0 + next * periodMs <= now; next++) {
      const intended = t0 + next * periodMs;
      const direct = schedule.next() < command.directShare && command.directs.length > 0;
      const kind = kinds[direct ? 1 : 0];
      const g = Math.floor(schedule.next() * kind.targets.length);
      const group = kind.targets[g]!;
      const sender = group.members[Math.floor(schedule.next() * group.members.length)]!;
      const client = state.clients.get(sender);
      const measured = intended >= state.measureFromMs;
      if (client !== undefined) {
        const ref = state.nextRef++;
        // Every member but the sender, whichever process holds it (each holds a share of all).
        if (measured) state.awaiting.set(ref, group.members.length - 1);
        client.send(group.target, JSON.stringify({ t: intended, s: sender, p: PADDING }), ref);
        if (measured) sent += 1;
      }
      if (measured) expected += kind.held[g]! - (client === undefined ? 0 : 1);
    }
    await sleep(TICK_MS);
  }
  const endMs = t0 + command.durationMs;
  const drainUntil = epochNowMs() + command.drainMs;
  while (state.delivered < expected && epochNowMs() < drainUntil) await sleep(20);
  return {
    sent,
    acked: state.acked,
    errors: state.errors,
    errorCodes: state.errorCodes,
    expected,
    refusedExpected: state.refusedExpected,
    delivered: state.delivered,
    windowMs: Math.max(endMs - state.measureFromMs, state.lastDeliveryMs - state.measureFromMs),
    latencyBuckets: [...state.histogram.buckets()],
    stillConnected: [...state.clients.values()].filter((c) => c.connected()).length,
  };
}

function arm(state: LoadState, command: ArmCommand): { armed: number } {
  const deadlineMs = epochNowMs() + command.boundMs;
  state.resuming = command.clients.flatMap((index) => {
    const client = state.clients.get(index);
    if (client?.armResume === undefined || !client.connected()) return [];
    return [client.armResume(state.chatsOf.get(index) ?? [], deadlineMs)];
  });
  return { armed: state.resuming.length };
}

async function awaitResume(state: LoadState, command: AwaitResumeCommand): Promise<ResumeResult> {
  const outcomes = await Promise.all(state.resuming);
  const resumed = outcomes.flatMap((o) => (o === undefined ? [] : [o]));
  return {
    armed: outcomes.length,
    resumed: resumed.length,
    recovered: resumed.filter((o) => o.recovered).length,
    resumeMs: resumed.map((o) => Math.max(0, o.atMs - command.fromEpochMs)),
  };
}

if (import.meta.main) {
  const state = new LoadState();
  const lines = createInterface({ input: process.stdin });
  const reply = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
  reply({ ready: true });
  for await (const line of lines) {
    const command = JSON.parse(line) as
      | ConnectCommand
      | RunCommand
      | ArmCommand
      | AwaitResumeCommand
      | { cmd: "close" };
    if (command.cmd === "connect") reply(await connectAll(state, command));
    else if (command.cmd === "run") reply(await run(state, command));
    else if (command.cmd === "arm") reply(arm(state, command));
    else if (command.cmd === "await-resume") reply(await awaitResume(state, command));
    else break;
  }
  for (const client of state.clients.values()) client.close();
  process.exit(0);
}
