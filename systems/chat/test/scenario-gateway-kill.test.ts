import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { enginesRequired } from "@casebook/lab/test-engines";
import { STREAM_MODULE_PATH } from "../src/edge/l4-front.ts";
import { main } from "../src/main.ts";

test("CH-01 CH-14 CH-27 the console's scenario: a private gateway SIGKILLed mid-conversation — clients reconnect through the front, nothing lost, nothing displayed twice", async (t) => {
  if (!existsSync(STREAM_MODULE_PATH)) {
    if (enginesRequired) assert.fail("nginx's stream module is not installed");
    return t.skip("nginx's stream module is not installed");
  }
  const dataDir = mkdtempSync(join(tmpdir(), "casebook-chat-scenario-test-"));
  const running = await main({ PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent", CASEBOOK_DATA: dataDir });
  t.after(async () => {
    await Promise.allSettled([running.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });
  const listed = (await (await fetch(`${running.url}/v1/scenarios`)).json()) as {
    scenarios: { id: string }[];
  };
  assert.deepEqual(
    listed.scenarios.map((s) => s.id),
    ["gateway-kill"],
  );
  // The scenario's own bound is 150 s (it starts a deployment): wait a little past it.
  const { run, secondStart } = await runScenario(running.url, "gateway-kill", {
    probeSecondStart: true,
    timeoutMs: 160_000,
  });
  assert.equal(secondStart, 409, "one run at a time");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  const tookS = (Date.parse(String(run.finishedAt)) - Date.parse(run.startedAt)) / 1_000;
  t.diagnostic(`the run took ${tookS} s, ${run.points.at(-1)?.x} s of it from the first send to the result`);
  assert.match(result, /0 lost, 0 duplicates displayed, 0 out of order, 0 offsets skipped — nothing lost/);
  const series = (name: string) => run!.points.filter((p) => p.series.startsWith(name)).map((p) => p.y);
  const sent = series("messages sent").at(-1) ?? 0;
  assert.ok(sent >= 30, `the clients talked (${sent} messages acknowledged)`);
  const [, displays, expected] = /(\d+) of (\d+) expected displays made/.exec(result)!.map(Number);
  assert.equal(displays, expected, "every member displayed every acknowledged message of its groups");
  assert.equal(series("messages displayed").at(-1), expected);
  // The kill took sockets away and they came back through the front.
  const [, held] = /SIGKILLed holding (\d+) of the/.exec(result)!.map(Number);
  assert.ok(held! >= 1, "the killed gateway held sockets");
  assert.ok((series("reconnects").at(-1) ?? 0) >= held!, "each of its clients reconnected");
  const [, stored, acked] = /(\d+) messages in the history for (\d+) acknowledged/.exec(result)!.map(Number);
  assert.equal(stored, acked, "a resend after the kill stored nothing new");
  assert.equal(acked, sent);
});
