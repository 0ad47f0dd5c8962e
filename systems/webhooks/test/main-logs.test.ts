/**
 * WH-22 "payloads never in logs": the service as a real process (`src/main.ts` on embedded
 * PGlite, LOG_LEVEL=debug, the most it ever logs) ingests events whose payloads carry a marker,
 * delivers one to a receiver that answers 200 and one to a receiver that fails with 500 (the
 * error paths log the most), and its whole stdout/stderr never contains the marker.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { spawnChild } from "@casebook/lab/spawn-child";

const MAIN = new URL("../src/main.ts", import.meta.url).pathname;
const MARKER = "card-4242-4242-4242-4242-do-not-log";
/** Bounds on the child: start on a loaded machine, then delivery of two events. */
const START_TIMEOUT_MS = 60_000;
const DELIVERY_TIMEOUT_MS = 30_000;

async function receiver(status: number): Promise<{ server: Server; url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      hits += 1;
      res.writeHead(status).end(status === 200 ? "ok" : `failing on purpose: ${MARKER.length}`);
    });
  });
  server.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/hook`, hits: () => hits };
}

/** Resolves with the first value `pick` finds in the child's output, or rejects after `timeoutMs`. */
function waitForOutput<T>(
  output: () => string,
  pick: (text: string) => T | undefined,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      const found = pick(output());
      if (found !== undefined) return resolve(found);
      if (Date.now() > deadline)
        return reject(new Error(`timed out; output so far:\n${output().slice(-2_000)}`));
      setTimeout(poll, 50);
    };
    poll();
  });
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  await eventually(check, { what, timeoutMs, intervalMs: 50 });
}

test("WH-22 payloads never reach the logs, on success and on failing deliveries, at LOG_LEVEL=debug", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-webhooks-logs-"));
  const ok = await receiver(200);
  const failing = await receiver(500);
  let output = "";
  // Its whole output is read raw (a last line without a newline too): no line queue, no echo.
  const child = await spawnChild(MAIN, {
    ready: false,
    queueLines: false,
    echoStderr: false,
    env: {
      PATH: process.env.PATH ?? "",
      PORT: "0",
      CASEBOOK_DATA: dataDir,
      LOG_LEVEL: "debug",
      WEBHOOKS_ALLOW_HTTP: "true",
      WEBHOOKS_ALLOW_CIDRS: "127.0.0.1/32",
      WEBHOOKS_POLL_INTERVAL_MS: "20",
    },
  });
  // End of input at once, as stdin "ignore" gave: PGlite's stdin device reads fd 0 with a
  // blocking readSync, which an open, silent pipe would hold forever.
  child.process.stdin.end();
  child.process.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  child.process.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
  });
  t.after(async () => {
    await child.kill();
    ok.server.close();
    failing.server.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const url = await waitForOutput(
    () => output,
    (text) =>
      /"msg":"webhooks listening"[^\n]*/.test(text) ? /"url":"(http:\/\/[^"]+)"/.exec(text)?.[1] : undefined,
    START_TIMEOUT_MS,
  );
  const apiKey = await waitForOutput(
    () => output,
    (text) => /"apiKey":"(whk_[^"]+)"/.exec(text)?.[1],
    START_TIMEOUT_MS,
  );
  const call = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    assert.ok(res.status < 300, `${path} answered ${res.status}: ${await res.text()}`);
  };
  await call("/v1/subscriptions", { url: ok.url, eventTypes: ["card.saved"] });
  await call("/v1/subscriptions", { url: failing.url, eventTypes: ["card.saved"] });
  for (let i = 0; i < 2; i++)
    await call("/v1/events", { type: "card.saved", payload: { secret: MARKER, i } });

  await until(
    () => ok.hits() >= 2 && failing.hits() >= 2,
    DELIVERY_TIMEOUT_MS,
    "both receivers to be called twice",
  );
  child.process.kill("SIGTERM");
  await child.exited;
  assert.ok(
    output.split("\n").filter((line) => line.includes('"level":"')).length > 3,
    "the service did log",
  );
  assert.ok(!output.includes(MARKER), "no payload in the logs");
});
