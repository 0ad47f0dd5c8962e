import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { freePort } from "../src/free-port.ts";
import { natsJetStreamProbe, type SpawnedNats, spawnNats } from "../src/spawn-nats.ts";
import { engineFree, tcpReachable } from "../src/test-engines.ts";
import { connectErrorCode, eventually, runThenDie } from "./process-helpers.ts";

const spawnNatsPath = fileURLToPath(new URL("../src/spawn-nats.ts", import.meta.url));

describe("spawnNats", () => {
  let nats: SpawnedNats;
  before(async () => {
    nats = await spawnNats();
  });
  after(async () => {
    await nats.stop();
  });

  test("answers JetStream's API on its own port, with its store in its own dir", async (t) => {
    if (engineFree(t)) return;
    assert.match(nats.url, /^nats:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(nats.port, 4222);
    const probe = await natsJetStreamProbe(nats.port, 1_000);
    assert.equal(probe?.info.jetstream, true);
    assert.match(probe?.reply ?? "", /account_info_response/);
    assert.equal(existsSync(nats.storeDir), true);
  });

  test("pause makes requests time out; resume answers again", async (t) => {
    if (engineFree(t)) return;
    nats.pause();
    assert.equal(nats.state, "paused");
    assert.equal(await natsJetStreamProbe(nats.port, 300), undefined);
    nats.resume();
    assert.equal(nats.state, "running");
    assert.ok(await natsJetStreamProbe(nats.port, 1_000));
  });

  test("kill refuses connections; restart serves JetStream again on the same port", async (t) => {
    if (engineFree(t)) return;
    const pid = nats.pid;
    await nats.kill();
    assert.equal(nats.state, "exited");
    assert.equal(await connectErrorCode(nats.port), "ECONNREFUSED");
    await nats.restart();
    assert.notEqual(nats.pid, pid);
    assert.ok(await natsJetStreamProbe(nats.port, 1_000));
  });
});

test("a lost port race is detected: a port answering for another nats-server is not taken as ready", async (t) => {
  if (engineFree(t)) return;
  const winner = await spawnNats();
  const ports = [winner.port];
  const loser = await spawnNats({ pickPort: async () => ports.shift() ?? (await freePort()) });
  try {
    assert.notEqual(loser.port, winner.port, "the loser moved to a fresh port");
    const [a, b] = await Promise.all([
      natsJetStreamProbe(winner.port, 1_000),
      natsJetStreamProbe(loser.port, 1_000),
    ]);
    assert.notEqual(a?.info.server_name, b?.info.server_name);
  } finally {
    await loser.stop();
    await winner.stop();
  }
});

test("stop is final: the port is refused, the store is gone, restart fails", async (t) => {
  if (engineFree(t)) return;
  const nats = await spawnNats();
  await nats.stop();
  await nats.stop(); // idempotent
  assert.equal(await tcpReachable("127.0.0.1", nats.port), false);
  assert.equal(existsSync(nats.storeDir), false);
  await assert.rejects(nats.restart(), { code: "LAB_ENGINE_NOT_RUNNING" });
});

test("the engine dies with the test process, even when that is SIGKILLed", async (t) => {
  if (engineFree(t)) return;
  const body = `
    import { spawnNats } from ${JSON.stringify(spawnNatsPath)};
    const nats = await spawnNats();
    console.log(JSON.stringify({ port: nats.port, dir: nats.storeDir }));
  `;
  const { port, dir } = await runThenDie<{ port: number; dir: string }>(body, "SIGKILL");
  await eventually(async () => (await connectErrorCode(port)) === "ECONNREFUSED");
  await eventually(() => !existsSync(dir));
});
