import assert from "node:assert/strict";
import { test } from "node:test";
import { type LoadProgress, runClosedLoop, runOpenLoop } from "../src/load-generator.ts";

const tick = () => new Promise<void>((r) => setImmediate(r));

/** Blocks the event loop, as a GC pause or a stuck sender would. */
function stallEventLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: nothing else runs, which is the point
  }
}

test("open loop sends the scheduled number of requests at the asked rate", async () => {
  const report = await runOpenLoop({ ratePerS: 400, count: 100, task: tick });
  assert.equal(report.mode, "open");
  assert.equal(report.count, 100);
  assert.equal(report.ok, 100);
  assert.equal(report.errors, 0);
  assert.equal(report.dropped, 0);
  assert.equal(report.targetRatePerS, 400);
  // 100 arrivals spaced 2.5 ms apart span ~250 ms: the rate is the schedule's, within timer slack.
  assert.ok(
    report.achievedRatePerS > 200 && report.achievedRatePerS < 500,
    `rate ${report.achievedRatePerS}`,
  );
  assert.equal(report.histogram.count, 100);
  assert.ok(report.latencyMs.p50 <= report.latencyMs.p99 && report.latencyMs.p99 <= report.latencyMs.max);
});

test("a stall is not hidden: requests due during it carry it in their latency (coordinated omission)", async () => {
  const report = await runOpenLoop({
    ratePerS: 100,
    count: 100,
    lateAfterMs: 10,
    task: async ({ index }) => {
      if (index === 30) stallEventLoop(300); // ~30 requests fall due while nothing can be sent
      await tick();
    },
  });
  assert.equal(report.count, 100);
  assert.ok(report.late >= 20, `late ${report.late}`);
  assert.ok(report.latencyMs.max >= 280, `max ${report.latencyMs.max} ms`);
  // A closed-loop or send-time measurement would report one slow request; here a quarter are slow.
  assert.ok(report.latencyMs.p90 >= 50, `p90 ${report.latencyMs.p90} ms`);
});

test("the in-flight bound holds: requests due while it is reached are dropped and counted", async () => {
  let inFlight = 0;
  let maxSeen = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const report = await runOpenLoop({
    ratePerS: 500,
    count: 40,
    maxInFlight: 5,
    onProgress: (p: LoadProgress) => {
      if (p.phase === "drain") release(); // every request has been sent or dropped
    },
    task: async () => {
      maxSeen = Math.max(maxSeen, ++inFlight);
      await gate;
      inFlight--;
    },
  });
  assert.equal(maxSeen, 5);
  assert.equal(report.ok, 5);
  assert.equal(report.dropped, 35);
  assert.equal(report.count, 5);
});

test("warmup requests run but are not measured", async () => {
  const report = await runOpenLoop({ ratePerS: 200, durationMs: 250, warmupMs: 100, task: tick });
  // 50 arrivals at 5 ms; those intended in the first 100 ms (20) are warmup.
  assert.equal(report.warmupCount, 20);
  assert.equal(report.count, 30);
  assert.equal(report.histogram.count, 30);
});

test("rejections are errors; a request past requestTimeoutMs is a timeout recorded at its age", async () => {
  const aborted: number[] = [];
  const report = await runOpenLoop({
    ratePerS: 1_000,
    count: 10,
    requestTimeoutMs: 200,
    task: ({ index, signal }) => {
      if (index === 0) {
        return new Promise((_, reject) =>
          signal.addEventListener("abort", () => {
            aborted.push(index);
            reject(signal.reason);
          }),
        );
      }
      return index % 2 === 1 ? Promise.reject(new Error("odd")) : tick();
    },
  });
  assert.deepEqual(aborted, [0]);
  assert.equal(report.count, 10);
  assert.equal(report.errors, 6); // five odd indexes and the timeout
  assert.equal(report.timeouts, 1);
  assert.equal(report.ok, 4);
  assert.ok(report.latencyMs.max >= 200 - 1, `max ${report.latencyMs.max}`);
});

test("progress reports each phase in order", async () => {
  const phases: string[] = [];
  await runOpenLoop({
    ratePerS: 200,
    durationMs: 100,
    warmupMs: 20,
    task: tick,
    onProgress: (p) => {
      if (phases.at(-1) !== p.phase) phases.push(p.phase);
    },
  });
  assert.deepEqual(phases, ["warmup", "measure", "drain"]);
});

test("closed loop keeps exactly `concurrency` requests in flight and runs `count` of them", async () => {
  let inFlight = 0;
  let maxSeen = 0;
  const report = await runClosedLoop({
    concurrency: 4,
    count: 200,
    task: async () => {
      maxSeen = Math.max(maxSeen, ++inFlight);
      await tick();
      inFlight--;
    },
  });
  assert.equal(report.mode, "closed");
  assert.equal(maxSeen, 4);
  assert.equal(report.count, 200);
  assert.equal(report.ok, 200);
  assert.ok(report.achievedRatePerS > 0);
  assert.equal(report.targetRatePerS, undefined);
});

test("closed loop for a duration stops sending at the end of it", async () => {
  const report = await runClosedLoop({ concurrency: 2, durationMs: 100, warmupMs: 20, task: tick });
  assert.ok(report.count > 0);
  assert.ok(report.warmupCount > 0);
  assert.ok(report.measuredMs < 1_000, `measured ${report.measuredMs} ms`);
});

test("closed loop with spreadStartMs starts its workers apart across the span, then keeps them all busy", async () => {
  const sentAt: number[] = [];
  const started = performance.now();
  const report = await runClosedLoop({
    concurrency: 4,
    count: 8,
    spreadStartMs: 200,
    task: async () => {
      sentAt.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 300));
    },
  });
  assert.equal(report.ok, 8);
  // Workers at 0, 50, 100 and 150 ms (never before their slot; all four in flight before the
  // first 300 ms request ends), each sending again when its request ends.
  const firstFour = sentAt.slice(0, 4);
  for (const [i, at] of firstFour.entries()) {
    assert.ok(at >= i * 50 - 1 && at < 300, `worker ${i} sent its first at ${at} ms`);
  }
  for (const [i, at] of sentAt.slice(4).entries()) {
    assert.ok(
      at >= (firstFour[i] ?? 0) + 299,
      `worker ${i}'s second request at ${at} ms, its first at ${firstFour[i]}`,
    );
  }
});

test("bad options are typed errors naming the option", async () => {
  await assert.rejects(runOpenLoop({ ratePerS: 0, count: 1, task: tick }), {
    code: "LAB_LOAD_INVALID",
    fields: { option: "ratePerS" },
  });
  await assert.rejects(runOpenLoop({ ratePerS: 10, count: 1, durationMs: 10, task: tick }), {
    code: "LAB_LOAD_INVALID",
    fields: { option: "durationMs" },
  });
  await assert.rejects(runOpenLoop({ ratePerS: 10, durationMs: 10, warmupMs: 10, task: tick }), {
    code: "LAB_LOAD_INVALID",
    fields: { option: "warmupMs" },
  });
  await assert.rejects(runClosedLoop({ concurrency: 1, count: 1, spreadStartMs: -1, task: tick }), {
    code: "LAB_LOAD_INVALID",
    fields: { option: "spreadStartMs" },
  });
  await assert.rejects(runClosedLoop({ concurrency: 0, count: 1, task: tick }), {
    code: "LAB_LOAD_INVALID",
    fields: { option: "concurrency" },
  });
});
