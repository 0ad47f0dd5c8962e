import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { Agent, get, type IncomingMessage } from "node:http";
import { connect } from "node:net";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { createLogger } from "../../src/http/logger.ts";
import { createService } from "../../src/http/service.ts";
import { installSignalHandlers, runCloseHooks } from "../../src/http/shutdown.ts";

const silent = { level: "silent" } as const;

/** A promise plus the function that settles it: how a test holds a handler mid-request. */
function latch(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

function fetchText(url: string, agent: Agent): Promise<{ res: IncomingMessage; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ res, body }));
      res.on("error", reject);
    }).on("error", reject);
  });
}

function connectError(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code));
  });
}

/** Polls a condition each event-loop turn, bounded by `deadlineMs`: Node signals no event when a server stops listening. */
async function until(condition: () => boolean, deadlineMs = 5_000): Promise<void> {
  await eventually(condition, { timeoutMs: deadlineMs, intervalMs: 0 });
}

test("close() drains: the in-flight request completes with 200, new connections are refused, hooks run after", async () => {
  const events: string[] = [];
  const entered = latch();
  const release = latch();
  const service = createService({
    name: "drain-test",
    version: "0",
    log: silent,
    defaultMetrics: false,
    onClose: [
      async function closeCache() {
        events.push("cache closed");
      },
      async function closePool() {
        events.push("pool closed");
      },
    ],
  });
  service.app.get("/slow", async () => {
    entered.open();
    await release.promise;
    events.push("handler finished");
    return { done: true };
  });
  service.app.addHook("onResponse", async () => {
    events.push("response sent");
  });
  const { url } = await service.listen({ port: 0 });
  const port = Number(new URL(url).port);
  const agent = new Agent({ keepAlive: true });
  const slow = fetchText(`${url}/slow`, agent);
  await entered.promise;

  const closed = service.close();
  assert.equal(service.closing, true);
  await until(() => !service.app.server.listening);
  assert.equal(await connectError(port), "ECONNREFUSED");
  assert.deepEqual(events, [], "nothing closed while the request is in flight");

  release.open();
  const { res, body } = await slow;
  assert.equal(res.statusCode, 200);
  assert.deepEqual(JSON.parse(body), { done: true });
  assert.equal(res.headers.connection, "close", "the drained connection is not kept alive");
  await closed;
  assert.deepEqual(events, ["handler finished", "response sent", "pool closed", "cache closed"]);
  agent.destroy();
});

test("requests that reach the service after close() get 503 SERVICE_CLOSING with Connection: close", async () => {
  const service = createService({ name: "closing-test", version: "0", log: silent, defaultMetrics: false });
  await service.app.ready();
  const closed = service.close();
  const res = await service.app.inject({ url: "/healthz" });
  assert.equal(res.statusCode, 503);
  assert.equal(res.headers.connection, "close");
  assert.equal(res.json().code, "SERVICE_CLOSING");
  assert.ok(res.headers["content-type"]?.startsWith("application/problem+json"));
  await closed;
});

test("a request still running after drainTimeoutMs is cut, and the close hooks still run", async () => {
  const events: string[] = [];
  const entered = latch();
  const never = latch();
  const service = createService({
    name: "drain-timeout-test",
    version: "0",
    log: silent,
    defaultMetrics: false,
    drainTimeoutMs: 50,
    onClose: [() => void events.push("pool closed")],
  });
  service.app.get("/stuck", async () => {
    entered.open();
    await never.promise;
    return { late: true };
  });
  const { url } = await service.listen({ port: 0 });
  const agent = new Agent({ keepAlive: false });
  const stuck = fetchText(`${url}/stuck`, agent);
  await entered.promise;
  await service.close();
  await assert.rejects(stuck, /socket hang up|ECONNRESET/);
  assert.deepEqual(events, ["pool closed"]);
  never.open();
});

test("close() is idempotent and rejects with every close-hook failure after running all hooks", async () => {
  const events: string[] = [];
  const service = createService({
    name: "hook-failure-test",
    version: "0",
    log: silent,
    defaultMetrics: false,
    onClose: [
      () => void events.push("first"),
      () => {
        throw new Error("pool end failed");
      },
    ],
  });
  service.onClose(() => void events.push("added later"));
  const first = service.close();
  assert.equal(service.close(), first);
  await assert.rejects(first, (error: unknown) => {
    assert.ok(error instanceof AggregateError);
    assert.equal(error.errors.length, 1);
    assert.match(String(error.errors[0]), /pool end failed/);
    return true;
  });
  assert.deepEqual(events, ["added later", "first"]);
});

test("a close hook that hangs is abandoned after timeoutMs and reported", async () => {
  const never = latch();
  const failures = await runCloseHooks(
    [
      async function hangs() {
        await never.promise;
      },
    ],
    {
      timeoutMs: 20,
      log: createLogger({ service: "t", version: "0", level: "silent" }),
    },
  );
  assert.equal(failures.length, 1);
  assert.match(failures[0]!.message, /close hook hangs did not finish within 20 ms/);
  never.open();
});

test("installSignalHandlers closes once on the first signal, exits 0, and exits 1 on a second signal", async () => {
  const source = new EventEmitter();
  const exits: number[] = [];
  let closes = 0;
  const done = latch();
  const service = {
    log: createLogger({ service: "t", version: "0", level: "silent" }),
    close: async () => {
      closes++;
      await done.promise;
    },
  };
  const uninstall = installSignalHandlers(service, { source, exit: (code) => void exits.push(code) });
  source.emit("SIGTERM", "SIGTERM");
  source.emit("SIGINT", "SIGINT");
  assert.equal(closes, 1);
  assert.deepEqual(exits, [1], "the second signal stops waiting");
  done.open();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(exits, [1, 0]);
  uninstall();
  assert.equal(source.listenerCount("SIGTERM"), 0);
  assert.equal(source.listenerCount("SIGINT"), 0);
});

test("installSignalHandlers exits 1 when close fails", async () => {
  const source = new EventEmitter();
  const exited = new Promise<number>((resolve) => {
    installSignalHandlers(
      {
        log: createLogger({ service: "t", version: "0", level: "silent" }),
        close: async () => Promise.reject(new Error("x")),
      },
      { source, exit: resolve },
    );
  });
  source.emit("SIGTERM", "SIGTERM");
  assert.equal(await exited, 1);
});
