/**
 * The composition root end to end, in process on port 0 with PGlite in a temporary
 * CASEBOOK_DATA: the operations routes (/healthz, /readyz, /metrics with this system's own
 * metrics, /openapi.json), the demo workspace and its key on a first embedded start, a link
 * created and followed over real HTTP; as child processes, `main.ts --help` listing every
 * setting and a bad setting stopping the start with exit 2 and its name.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { main, type RunningSystem } from "../src/main.ts";

const mainPath = join(import.meta.dirname, "..", "src", "main.ts");
/** Bound on each child: a hang fails the test instead of the suite. */
const CHILD_TIMEOUT_MS = 30_000;

let running: RunningSystem;
let dir = "";
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "casebook-us-main-"));
  running = await main({ PORT: "0", LOG_LEVEL: "silent", CASEBOOK_DATA: dir });
});
after(async () => {
  // Undefined when the start failed: that failure is the one to read, not a TypeError here.
  await running?.close();
  await rm(dir, { recursive: true, force: true });
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
  const text = await res.text();
  assert.match(text, /^url_shortener_build_info\{version="[^"]+"\} 1$/m);
  assert.match(text, /^# TYPE url_shortener_read_cache_requests_total counter$/m);
  assert.match(text, /^# TYPE http_request_duration_seconds histogram$/m);
});

test("/openapi.json describes the service", async () => {
  const doc = (await (await fetch(`${running.url}/openapi.json`)).json()) as { info?: { title?: string } };
  assert.equal(doc.info?.title, "url-shortener");
});

test("a first embedded start makes the demo workspace; its key shortens a URL that redirects over HTTP", async () => {
  const apiKey = running.bootstrap?.apiKey;
  assert.match(apiKey ?? "", /^usk_[0-9a-f]{16}_/);
  const made = await fetch(`${running.url}/v1/links`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ url: "https://example.com/over-http" }),
  });
  assert.equal(made.status, 201);
  const { code } = (await made.json()) as { code: string };
  const hop = await fetch(`${running.url}/${code}`, { redirect: "manual" });
  assert.equal(hop.status, 302);
  assert.equal(hop.headers.get("location"), "https://example.com/over-http");
  assert.equal(hop.headers.get("cache-control"), "max-age=300, stale-if-error=86400");
});

test("main.ts --help prints every setting and exits 0", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [mainPath, "--help"], {
    timeout: CHILD_TIMEOUT_MS,
  });
  assert.match(stdout, /^url-shortener — /);
  for (const env of ["PORT", "HOST", "LOG_LEVEL", "DATABASE_URL", "REDIS_URL", "URL_SHORTENER_DOMAINS"]) {
    assert.match(stdout, new RegExp(`\\b${env}\\b`));
  }
});

test("a bad setting stops the start with exit 2, naming it", async () => {
  for (const [name, value] of [
    ["PORT", "eighty"],
    ["URL_SHORTENER_DOMAINS", "ftp://nope"],
  ]) {
    const failed = await promisify(execFile)(process.execPath, [mainPath], {
      timeout: CHILD_TIMEOUT_MS,
      env: { ...process.env, CASEBOOK_DATA: dir, [name!]: value },
    }).then(
      () => assert.fail("the start should have failed"),
      (error: { code?: number; stderr?: string }) => error,
    );
    assert.equal(failed.code, 2, failed.stderr);
    assert.match(failed.stderr ?? "", new RegExp(name!));
  }
});
