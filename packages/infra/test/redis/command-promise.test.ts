import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";
import { engineFree, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { installCommandPromises, PATCHED_IOREDIS_VERSION } from "../../src/redis/command-promise.ts";
import { closeRedis, connectRedis } from "../../src/redis/connect-redis.ts";

const run = promisify(execFile);
const moduleUrl = new URL("../../src/redis/command-promise.ts", import.meta.url).href;

test("the replacement is installed on the ioredis it was written against (an upgrade fails here: re-check it)", (t) => {
  if (engineFree(t)) return;
  assert.deepEqual(
    installCommandPromises(),
    { installed: true },
    `written against ioredis ${PATCHED_IOREDIS_VERSION}`,
  );
});

test("a command's reject closure is born in the young generation once installed (ioredis's own is born old)", async (t) => {
  if (engineFree(t)) return;
  // V8's own answer, from a child with natives syntax: how many of 20,000 commands' reject
  // functions were allocated in the old generation, before and after the replacement.
  const script = `
    import { Command } from "ioredis";
    const oldRejects = () => {
      let old = 0;
      for (let i = 0; i < 20000; i++) if (!%InYoungGeneration(new Command("get", ["k" + i]).reject)) old++;
      return old;
    };
    const before = oldRejects();
    const { installCommandPromises } = await import(${JSON.stringify(moduleUrl)});
    installCommandPromises();
    console.log(JSON.stringify({ before, after: oldRejects() }));
  `;
  const { stdout } = await run(
    process.execPath,
    ["--allow-natives-syntax", "--input-type=module", "-e", script],
    {
      cwd: new URL("../..", import.meta.url),
    },
  );
  const { before, after } = JSON.parse(stdout) as { before: number; after: number };
  assert.ok(
    before > 1_000,
    `ioredis's own reject closures: ${before} of 20,000 old (the effect this undoes)`,
  );
  assert.equal(after, 0, `${after} of 20,000 reject closures still old`);
});

test("commands settle as ioredis's do: replies, error replies, callbacks, the friendly error stack", async (t) => {
  const url = await requireRedis(t);
  if (!url) return;
  const key = `${uniqueName("infra_command_promise")}`;
  const redis = await connectRedis({ url });
  const friendly = await connectRedis({ url });
  friendly.options.showFriendlyErrorStack = true;
  try {
    assert.equal(await redis.set(key, "text"), "OK");
    assert.equal(await redis.get(key), "text");
    await assert.rejects(redis.incr(key), /not an integer/);
    const viaCallback = await new Promise((resolve, reject) =>
      redis.get(key, (err, value) => (err ? reject(err) : resolve(value))),
    );
    assert.equal(viaCallback, "text");
    const failedViaCallback = await new Promise<Error | null | undefined>((resolve) =>
      redis.incr(key, (err) => resolve(err)),
    );
    assert.match(String(failedViaCallback), /not an integer/);
    // showFriendlyErrorStack: the error's stack points at the caller (this file), as ioredis's does.
    const error = await friendly.incr(key).catch((e: unknown) => e as Error);
    assert.match(String((error as Error).stack), /command-promise\.test\.ts/);
  } finally {
    await redis.del(key);
    await Promise.all([closeRedis(redis), closeRedis(friendly)]);
  }
});
