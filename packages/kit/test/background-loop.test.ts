/**
 * BackgroundLoop: back-to-back full rounds, idle pauses cut by wake() and stop(), the
 * failure backoff (doubling, cap, reset, jitter), no overlapping rounds, and no error
 * escaping. The harness hands every round and every pause to the test as an event it
 * settles by hand, so nothing here waits on a timer's luck.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BackgroundLoop,
  type BackgroundLoopOptions,
  type FailureBackoff,
  failurePauseMs,
} from "../src/background-loop.ts";
import { backoffDelayMs, jitterDelayMs } from "../src/backoff.ts";
import { seededRandom } from "../src/random.ts";

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

type LoopEvent =
  | { kind: "round"; outcome: Deferred<boolean> }
  | { kind: "pause"; ms: number; sleep: Deferred<void> };

/** A loop that never delivers the awaited round or pause fails its test instead of hanging the file. */
const BOUNDED = { timeout: 10_000 };
/** Most events one test may take: a loop gone wild fails the test instead of hanging it. */
const MAX_EVENTS = 1_000;

/** A loop whose rounds and pauses are events the test settles; `errors` records onError's calls. */
function harness(overrides: Partial<BackgroundLoopOptions> = {}) {
  const queued: LoopEvent[] = [];
  let notify: (() => void) | undefined;
  let taken = 0;
  const push = (event: LoopEvent) => {
    queued.push(event);
    notify?.();
  };
  const errors: Array<[unknown, number]> = [];
  const loop = new BackgroundLoop({
    name: "test loop",
    idleMs: 100,
    failureBackoff: { capMs: 1_000, jitter: "none" },
    round: () => {
      const outcome = deferred<boolean>();
      push({ kind: "round", outcome });
      return outcome.promise;
    },
    sleep: (ms) => {
      const sleep = deferred<void>();
      push({ kind: "pause", ms, sleep });
      return sleep.promise;
    },
    onError: (error, failures) => void errors.push([error, failures]),
    ...overrides,
  });
  /** The loop's next round or pause, in order. */
  async function next(): Promise<LoopEvent> {
    assert.ok(++taken <= MAX_EVENTS, "the loop ran away");
    while (queued.length === 0) await new Promise<void>((resolve) => (notify = resolve));
    return queued.shift()!;
  }
  async function nextRound(): Promise<Deferred<boolean>> {
    const event = await next();
    assert.equal(
      event.kind,
      "round",
      `expected a round, got a pause of ${event.kind === "pause" ? event.ms : ""} ms`,
    );
    return (event as Extract<LoopEvent, { kind: "round" }>).outcome;
  }
  async function nextPause(): Promise<Extract<LoopEvent, { kind: "pause" }>> {
    const event = await next();
    assert.equal(event.kind, "pause", "expected a pause, got a round");
    return event as Extract<LoopEvent, { kind: "pause" }>;
  }
  /** Lets every queued macrotask run (the loop's yields and settled promises). */
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  return { loop, errors, queued, next, nextRound, nextPause, settle };
}

test(
  "full rounds run back to back; the first round that is not full is followed by the idle pause",
  BOUNDED,
  async () => {
    const h = harness();
    h.loop.start();
    for (let i = 0; i < 3; i++) (await h.nextRound()).resolve(true);
    (await h.nextRound()).resolve(false);
    assert.equal((await h.nextPause()).ms, 100);
    await Promise.all([h.loop.stop(), h.settle()]);
    assert.equal(h.queued.length, 0);
  },
);

test(
  "back-to-back rounds yield to the event loop: a round that never really awaits cannot starve a timer",
  BOUNDED,
  async () => {
    let rounds = 0;
    const loop = new BackgroundLoop({
      name: "busy loop",
      idleMs: 100,
      failureBackoff: { capMs: 100, jitter: "none" },
      round: () => {
        rounds += 1;
        return Promise.resolve(true);
      },
      onError: () => {},
    });
    loop.start();
    // With only microtask awaits between rounds this timer would never fire and the test would hang.
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    await loop.stop();
    assert.ok(rounds >= 1, `rounds ran: ${rounds}`);
  },
);

test("an idle pause lasts idleMs and is followed by the next round", BOUNDED, async () => {
  const h = harness();
  h.loop.start();
  (await h.nextRound()).resolve(false);
  const pause = await h.nextPause();
  assert.equal(pause.ms, 100);
  pause.sleep.resolve();
  (await h.nextRound()).resolve(false);
  await h.nextPause();
  await h.loop.stop();
});

test(
  "wake() cuts the pause in progress: the next round starts though the sleep never ended",
  BOUNDED,
  async () => {
    const h = harness();
    h.loop.start();
    (await h.nextRound()).resolve(false);
    await h.nextPause(); // never resolved
    h.loop.wake();
    (await h.nextRound()).resolve(false);
    await h.nextPause();
    await h.loop.stop();
  },
);

test("wake() during a round is not lost: the pause after that round is skipped", BOUNDED, async () => {
  const h = harness();
  h.loop.start();
  const round = await h.nextRound();
  h.loop.wake();
  round.resolve(false);
  (await h.nextRound()).resolve(false);
  // The wake was served by the round it preceded: this pause is not skipped.
  await h.nextPause();
  await h.loop.stop();
});

test(
  "wake() before a round starts is served by that round, not by skipping a later pause",
  BOUNDED,
  async () => {
    const h = harness();
    h.loop.start();
    (await h.nextRound()).resolve(false);
    const pause = await h.nextPause();
    h.loop.wake();
    h.loop.wake(); // several wakes during one pause are one wake
    pause.sleep.resolve();
    (await h.nextRound()).resolve(false);
    await h.nextPause();
    await h.loop.stop();
  },
);

test("stop() during a pause resolves at once and no further round runs", BOUNDED, async () => {
  const h = harness();
  h.loop.start();
  (await h.nextRound()).resolve(false);
  await h.nextPause(); // never resolved: only stop() can end it
  await h.loop.stop();
  assert.equal(h.loop.running, false);
  await h.settle();
  assert.equal(h.queued.length, 0, "no round after stop");
});

test(
  "stop() during a round waits for that round, then runs no other (even if the round said more)",
  BOUNDED,
  async () => {
    const h = harness();
    h.loop.start();
    const round = await h.nextRound();
    let stopped = false;
    const stopping = h.loop.stop().then(() => {
      stopped = true;
    });
    await h.settle();
    assert.equal(stopped, false, "stop waits for the round in progress");
    assert.equal(h.loop.running, true);
    round.resolve(true);
    await stopping;
    assert.equal(h.loop.running, false);
    await h.settle();
    assert.equal(h.queued.length, 0, "no round and no pause after stop");
  },
);

test("stop() is idempotent and start() after stop() runs a fresh loop", BOUNDED, async () => {
  const h = harness();
  await h.loop.stop(); // never started: resolves at once
  h.loop.start();
  assert.throws(() => h.loop.start(), { message: "test loop already started" });
  const round = await h.nextRound();
  const first = h.loop.stop();
  const second = h.loop.stop();
  assert.throws(() => h.loop.start(), /already started/, "still stopping: still started");
  round.resolve(false);
  await Promise.all([first, second]);
  await h.loop.stop();
  h.loop.start();
  (await h.nextRound()).resolve(false);
  assert.equal((await h.nextPause()).ms, 100);
  await h.loop.stop();
});

test(
  "failed rounds: onError with the count in a row, a pause doubling from idleMs to the cap, reset by a good round",
  BOUNDED,
  async () => {
    const h = harness(); // idle 100, cap 1 000, no jitter
    h.loop.start();
    const pauses: number[] = [];
    for (let i = 0; i < 6; i++) {
      (await h.nextRound()).reject(new Error(`down ${i}`));
      const pause = await h.nextPause();
      pauses.push(pause.ms);
      pause.sleep.resolve();
    }
    assert.deepEqual(pauses, [200, 400, 800, 1_000, 1_000, 1_000]);
    assert.deepEqual(
      h.errors.map(([error, failures]) => [(error as Error).message, failures]),
      [0, 1, 2, 3, 4, 5].map((i) => [`down ${i}`, i + 1]),
    );
    (await h.nextRound()).resolve(false);
    const idle = await h.nextPause();
    assert.equal(idle.ms, 100, "a good round resets the pause");
    idle.sleep.resolve();
    (await h.nextRound()).reject(new Error("down again"));
    assert.equal((await h.nextPause()).ms, 200, "and the doubling starts over");
    assert.equal(h.errors.at(-1)?.[1], 1);
    await h.loop.stop();
  },
);

test(
  "a failed round is never followed at once, and a full round after failures resets the count",
  BOUNDED,
  async () => {
    const h = harness();
    h.loop.start();
    (await h.nextRound()).reject(new Error("down"));
    (await h.nextPause()).sleep.resolve();
    (await h.nextRound()).resolve(true);
    (await h.nextRound()).reject(new Error("down"));
    assert.equal((await h.nextPause()).ms, 200);
    assert.deepEqual(
      h.errors.map(([, failures]) => failures),
      [1, 1],
    );
    await h.loop.stop();
  },
);

test(
  "equal jitter from the injected random source: each failure pause is the seeded draw in [d/2, d)",
  BOUNDED,
  async () => {
    const backoff: FailureBackoff = { capMs: 2_000, jitter: "equal", random: seededRandom("loop") };
    const h = harness({ idleMs: 100, failureBackoff: backoff });
    const expected = seededRandom("loop");
    h.loop.start();
    for (let failures = 1; failures <= 8; failures++) {
      (await h.nextRound()).reject(new Error("down"));
      const pause = await h.nextPause();
      const capped = backoffDelayMs(failures + 1, 100, 2_000);
      assert.equal(pause.ms, jitterDelayMs(capped, "equal", expected));
      assert.ok(pause.ms >= capped / 2 && pause.ms < capped, `${pause.ms} in [${capped / 2}, ${capped})`);
      pause.sleep.resolve();
    }
    (await h.nextRound()).resolve(false);
    assert.equal((await h.nextPause()).ms, 100, "the idle pause is never jittered");
    await h.loop.stop();
  },
);

test("failurePauseMs: doubles from idleMs, caps, never below idleMs, and bounds the exponent", () => {
  const none: FailureBackoff = { capMs: 2_000, jitter: "none" };
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6].map((n) => failurePauseMs(n, 100, none)),
    [200, 400, 800, 1_600, 2_000, 2_000],
  );
  for (const n of [1e6, 2 ** 31, Number.MAX_SAFE_INTEGER]) assert.equal(failurePauseMs(n, 100, none), 2_000);
  // A cap below idleMs keeps the pause at idleMs: failures never pause less than success does.
  assert.equal(failurePauseMs(3, 500, { capMs: 100, jitter: "none" }), 500);
  assert.equal(failurePauseMs(3, 500, { capMs: 500, jitter: "none" }), 500);
  for (const bad of [0, -1, 1.5, Number.NaN]) assert.throws(() => failurePauseMs(bad, 100, none), RangeError);
});

test("rounds never overlap, however often wake() is called", BOUNDED, async () => {
  let active = 0;
  let activeMax = 0;
  let rounds = 0;
  const gates: Array<Deferred<void>> = [];
  let roundStarted: (() => void) | undefined;
  const loop = new BackgroundLoop({
    name: "overlap",
    idleMs: 60_000,
    failureBackoff: { capMs: 60_000, jitter: "none" },
    round: async () => {
      active += 1;
      activeMax = Math.max(activeMax, active);
      rounds += 1;
      const gate = deferred<void>();
      gates.push(gate);
      roundStarted?.();
      try {
        await gate.promise;
        if (rounds % 3 === 0) throw new Error("a failed round");
        return rounds % 2 === 0;
      } finally {
        active -= 1;
      }
    },
    onError: () => {},
  });
  loop.start();
  for (let i = 0; i < 20; i++) {
    while (gates.length === 0) await new Promise<void>((resolve) => (roundStarted = resolve));
    for (let w = 0; w < 5; w++) loop.wake();
    gates.shift()!.resolve();
    loop.wake(); // any pause after this round is cut: the next round follows
  }
  while (gates.length === 0) await new Promise<void>((resolve) => (roundStarted = resolve));
  const stopping = loop.stop();
  loop.wake();
  gates.shift()!.resolve();
  await stopping;
  assert.equal(activeMax, 1);
  assert.equal(rounds, 21);
});

test(
  "the real timer: wake() and stop() cut a 60 s pause (the test would otherwise outlive its timeout)",
  BOUNDED,
  async () => {
    let rounds = 0;
    let idle: (() => void) | undefined;
    const loop = new BackgroundLoop({
      name: "timer",
      idleMs: 60_000,
      failureBackoff: { capMs: 60_000, jitter: "none" },
      round: async () => {
        rounds += 1;
        // The pause starts right after this round returns; a macrotask later it is in progress.
        setImmediate(() => idle?.());
        return false;
      },
      onError: () => {},
    });
    const paused = () => new Promise<void>((resolve) => (idle = resolve));
    let waiting = paused();
    loop.start();
    await waiting;
    waiting = paused();
    loop.wake();
    await waiting;
    assert.equal(rounds, 2);
    await loop.stop();
    assert.equal(loop.running, false);
  },
);

test(
  "no error escapes: a round that throws synchronously, one that rejects, and an onError that throws",
  BOUNDED,
  async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => {
      if (warning.name === "BackgroundLoopWarning") warnings.push(warning);
    };
    process.on("unhandledRejection", onUnhandled);
    process.on("uncaughtException", onUnhandled);
    process.on("warning", onWarning);
    try {
      let calls = 0;
      const reported: number[] = [];
      const h = harness({
        round: (() => {
          calls += 1;
          if (calls === 1) throw new Error("synchronous throw");
          return Promise.reject(new Error("rejection"));
        }) as () => Promise<boolean>,
        onError: (_error, failures) => {
          reported.push(failures);
          if (failures === 2) throw new Error("the reporter is broken");
        },
      });
      h.loop.start();
      for (let i = 0; i < 3; i++) (await h.nextPause()).sleep.resolve();
      await h.nextPause();
      await h.loop.stop();
      // Let a warning (emitted on the next tick) and any stray rejection surface.
      await h.settle();
      await h.settle();
      assert.deepEqual(reported, [1, 2, 3, 4]);
      assert.deepEqual(unhandled, []);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!.message, /test loop: onError threw/);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      process.off("uncaughtException", onUnhandled);
      process.off("warning", onWarning);
    }
  },
);

test("an injected sleep that rejects or throws only ends its pause", BOUNDED, async () => {
  let sleeps = 0;
  const h = harness({
    sleep: (() => {
      sleeps += 1;
      if (sleeps === 1) return Promise.reject(new Error("sleep broke"));
      if (sleeps === 2) throw new Error("sleep threw");
      return new Promise<void>(() => {});
    }) as (ms: number) => Promise<void>,
  });
  h.loop.start();
  for (let i = 0; i < 3; i++) (await h.nextRound()).resolve(false);
  await h.settle();
  assert.equal(sleeps, 3);
  await h.loop.stop();
});

test("options are validated at construction", () => {
  const base: BackgroundLoopOptions = {
    name: "valid",
    round: async () => false,
    idleMs: 100,
    failureBackoff: { capMs: 1_000, jitter: "none" },
    onError: () => {},
  };
  for (const idleMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => new BackgroundLoop({ ...base, idleMs }), { name: "RangeError", message: /idleMs/ });
  }
  assert.throws(
    () => new BackgroundLoop({ ...base, failureBackoff: { capMs: 0, jitter: "none" } }),
    /failureBackoff.capMs/,
  );
  assert.throws(
    () =>
      new BackgroundLoop({
        ...base,
        failureBackoff: { capMs: 1_000, jitter: "equal" } as unknown as FailureBackoff,
      }),
    { name: "TypeError", message: /random/ },
  );
  assert.throws(() => new BackgroundLoop({ ...base, name: " " }), TypeError);
});
