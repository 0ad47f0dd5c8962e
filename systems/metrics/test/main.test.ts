/**
 * The composition root end to end, in process on port 0: the operations routes the
 * service base gives every system (/healthz, /readyz, /metrics with this system's own
 * metrics, /openapi.json); as child processes, `main.ts --help` listing every setting and a
 * bad setting stopping the start with exit 2 and its name; WEBHOOKS_URL needing its key.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { loadSystemConfig } from "../src/config.ts";
import { main, type RunningSystem } from "../src/main.ts";

const mainPath = join(import.meta.dirname, "..", "src", "main.ts");
/** Bound on each child: a hang fails the test instead of the suite. */
const CHILD_TIMEOUT_MS = 30_000;

let running: RunningSystem;
let dataDir: string;
before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-main-"));
  running = await main({ PORT: "0", LOG_LEVEL: "silent", CASEBOOK_DATA: dataDir });
});
after(async () => {
  // Undefined when the start failed: that failure is the one to read, not a TypeError here.
  await running?.close();
  await rm(dataDir, { recursive: true, force: true });
});

test("/healthz answers 200 while the process lives", async () => {
  const res = await fetch(`${running.url}/healthz`);
  assert.equal(res.status, 200);
  await res.body?.cancel();
});

test("/readyz answers 200 when every readiness check passes", async () => {
  const res = await fetch(`${running.url}/readyz`);
  assert.equal(res.status, 200, await res.text());
});

test("/metrics serves the Prometheus text with the system's metrics", async () => {
  const res = await fetch(`${running.url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/plain/);
  const text = await res.text();
  assert.match(text, /^metrics_build_info\{version="[^"]+"\} 1$/m);
  assert.match(text, /^# TYPE http_request_duration_seconds histogram$/m);
});

test("/openapi.json describes the service", async () => {
  const res = await fetch(`${running.url}/openapi.json`);
  assert.equal(res.status, 200);
  const doc = (await res.json()) as { info?: { title?: string } };
  assert.equal(doc.info?.title, "metrics");
});

test("main.ts --help prints every setting and exits 0", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [mainPath, "--help"], {
    timeout: CHILD_TIMEOUT_MS,
  });
  assert.match(stdout, /^metrics — /);
  for (const env of ["PORT", "HOST", "LOG_LEVEL"]) assert.match(stdout, new RegExp(`\\b${env}\\b`));
});

test("a bad setting stops the start with exit 2, naming it", async () => {
  const failed = await promisify(execFile)(process.execPath, [mainPath], {
    timeout: CHILD_TIMEOUT_MS,
    env: { ...process.env, PORT: "eighty" },
  }).then(
    () => assert.fail("the start should have failed"),
    (error: { code?: number; stderr?: string }) => error,
  );
  assert.equal(failed.code, 2);
  assert.match(failed.stderr ?? "", /PORT/);
});

test("WEBHOOKS_URL without WEBHOOKS_API_KEY is refused by name; with it, alerts go to the webhooks system", () => {
  assert.throws(
    () => loadSystemConfig({ WEBHOOKS_URL: "http://127.0.0.1:8113" }),
    (error: Error) => /WEBHOOKS_API_KEY/.test(error.message),
  );
  const config = loadSystemConfig({
    WEBHOOKS_URL: "http://127.0.0.1:8113",
    WEBHOOKS_API_KEY: "whk_test_0000",
  });
  assert.equal(config.webhooksUrl, "http://127.0.0.1:8113");
});
