/**
 * The composition root end to end, in process on port 0 with PGlite in a temporary
 * CASEBOOK_DATA: the operations routes (/healthz, /readyz, /metrics with this system's own
 * metrics, /openapi.json), the demo workspace and its key on a first embedded start, a link
 * created and followed over real HTTP; as child processes, `main.ts --help` listing every
 * setting and a bad setting stopping the start with exit 2 and its name. And the redirect's
 * fast path (src/api/redirect-fast-path.ts) over real HTTP: a cached code is answered on
 * node:http before Fastify, and a client cannot tell the two paths apart — the same status,
 * Location, Cache-Control, a request id (the caller's when safe), the edge's marker, the visit
 * in the click buffer, the request in the duration histogram; what it must not answer (the
 * first, uncached request; a query string; HEAD; a deleted link) goes to Fastify.
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

const EDGE = "edge-token-for-main-tests-0123456789";
let running: RunningSystem;
let dir = "";
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "casebook-us-main-"));
  running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dir,
    URL_SHORTENER_EDGE_TOKEN: EDGE,
    URL_SHORTENER_CLICK_FLUSH_INTERVAL_MS: "600s",
  });
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

function call(
  method: string,
  path: string,
  token?: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  return fetch(`${running.url}${path}`, {
    method,
    redirect: "manual",
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function shorten(body: Record<string, unknown>): Promise<string> {
  const key = running.bootstrap!.apiKey;
  const res = await call("POST", "/v1/links", key, body);
  assert.equal(res.status, 201, await res.clone().text());
  return ((await res.json()) as { code: string }).code;
}

/** What a client sees of an answer, less what differs by nature (date, request id's value). */
async function seen(res: Response) {
  return {
    status: res.status,
    location: res.headers.get("location"),
    cacheControl: res.headers.get("cache-control"),
    contentLength: res.headers.get("content-length"),
    marker: res.headers.get("x-short-link-visit"),
    body: await res.text(),
  };
}

const durationCount = async () => {
  const text = await (await fetch(`${running.url}/metrics`)).text();
  const line =
    /^http_request_duration_seconds_count\{method="GET",route="\/:code",status_code="307"\} (\d+)/m.exec(
      text,
    );
  return Number(line?.[1] ?? 0);
};

test("US-01 US-08 a cached code is answered by the fast path exactly as Fastify answered it the first time", async () => {
  const code = await shorten({ url: "https://example.com/fast", status: 307, cacheMaxAgeS: 120 });
  const fast = () => running.fastPath!.answered;
  const waiting = running.clicks!.buffer.size;
  const before = fast();
  const durations = await durationCount();
  const first = await call("GET", `/${code}`);
  assert.equal(fast(), before, "the first request fills the LRU through Fastify");
  const firstId = first.headers.get("x-request-id");
  const second = await call("GET", `/${code}`, undefined, undefined, { "x-request-id": "trace-42" });
  assert.equal(fast(), before + 1, "the second is the fast path's");
  const fastSeen = await seen(second);
  assert.deepEqual(fastSeen, await seen(first));
  assert.deepEqual(fastSeen, {
    status: 307,
    location: "https://example.com/fast",
    cacheControl: "max-age=120, stale-if-error=86400",
    contentLength: "0",
    marker: null,
    body: "",
  });
  assert.match(firstId ?? "", /^[0-9a-f-]{36}$/);
  assert.equal(second.headers.get("x-request-id"), "trace-42", "the caller's safe id is kept");
  const third = await call("GET", `/${code}`, undefined, undefined, { "x-request-id": "bad id" });
  assert.match(third.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/, "an unsafe id is replaced");
  assert.equal(running.clicks!.buffer.size, waiting + 3, "each visit recorded, whichever path");
  // Fastify's visit and the fast path's two: equal in every field, so within one second the
  // buffer folds them into one entry (click-buffer.ts) — expanded here by their counts.
  const visits = running
    .clicks!.buffer.take(10_000)
    .flatMap((v) => Array.from({ length: v.count ?? 1 }, () => v))
    .slice(-3);
  assert.deepEqual(
    visits.map((v) => [v.code, v.status, v.ip]),
    [
      [code, 307, "127.0.0.1"],
      [code, 307, "127.0.0.1"],
      [code, 307, "127.0.0.1"],
    ],
  );
  assert.equal(await durationCount(), durations + 3, "both paths in the duration histogram");
});

test("US-09 from the edge (its token), the fast path sends the visit marker and records nothing here", async () => {
  const code = await shorten({ url: "https://example.com/edge" });
  await call("GET", `/${code}`); // into the LRU
  const waiting = running.clicks!.buffer.size;
  const before = running.fastPath!.answered;
  const res = await call("GET", `/${code}`, undefined, undefined, { "x-edge-token": EDGE });
  assert.equal(running.fastPath!.answered, before + 1);
  assert.equal(res.status, 302);
  assert.equal(res.headers.get("x-short-link-visit"), "1");
  assert.equal(running.clicks!.buffer.size, waiting);
});

test("what the fast path leaves to Fastify: a query string, HEAD, a deleted link", async () => {
  const code = await shorten({ url: "https://example.com/q?a=1" });
  await call("GET", `/${code}`);
  const before = running.fastPath!.answered;
  const withQuery = await call("GET", `/${code}?utm=x`);
  assert.equal(withQuery.headers.get("location"), "https://example.com/q?a=1&utm=x");
  assert.equal((await call("GET", `/${code}?bad=%00`)).status, 400, "the text guard still sees queries");
  assert.equal((await call("HEAD", `/${code}`)).status, 302);
  const deleted = await call("DELETE", `/v1/links/localhost:8109/${code}`, running.bootstrap!.apiKey);
  assert.equal(deleted.status, 204, await deleted.text());
  assert.equal((await call("GET", `/${code}`)).status, 404);
  assert.equal(running.fastPath!.answered, before, "none of these was the fast path's");
});
