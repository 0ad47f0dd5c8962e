import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { engineFree, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { closeRedis, connectRedis } from "../../src/redis/connect-redis.ts";
import { redisErrors } from "../../src/redis/redis-errors.ts";
import { parseScript } from "../../src/redis/script-contract.ts";
import { assembleScript, loadIncludes } from "../../src/redis/script-includes.ts";
import { ScriptRegistry } from "../../src/redis/script-registry.ts";

const nowMs = `-- now-ms: the server's clock.
local function nowMs()
  local t = redis.call('TIME')
  return t[1] * 1000 + math.floor(t[2] / 1000)
end
`;
const twice = `--- @include "now-ms"
local function twiceNowMs() return 2 * nowMs() end
`;
const stamp = `-- stamp: writes the server's time into a key.
-- KEYS[1] string key
-- ARGV[1] tag
-- returns {tag, ms}
--- @include "now-ms"
--- @include "twice"
local ms = nowMs()
redis.call('SET', KEYS[1], ms)
return {ARGV[1], ms, twiceNowMs() > 0 and 1 or 0}
`;
const includes = new Map([
  ["now-ms", nowMs],
  ["twice", twice],
]);

function invalid(run: () => unknown, pattern: RegExp): void {
  assert.throws(run, (error) => redisErrors.is(error, "REDIS_SCRIPT_INVALID") && pattern.test(error.message));
}

async function withDir(files: Record<string, string>, body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-includes-"));
  try {
    for (const [name, text] of Object.entries(files)) {
      await mkdir(dirname(join(dir, name)), { recursive: true });
      await writeFile(join(dir, name), text);
    }
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test("a directive is replaced by its include, nested includes too, each once", (t) => {
  if (engineFree(t)) return;
  const { lua, included } = assembleScript("stamp-1.lua", stamp, includes);
  assert.deepEqual(included, ["now-ms", "twice"]);
  assert.equal(
    lua.match(/local function nowMs\(\)/g)?.length,
    1,
    "now-ms inlined once, though included twice",
  );
  assert.ok(lua.indexOf("function nowMs") < lua.indexOf("function twiceNowMs"), "in directive order");
  assert.doesNotMatch(lua, /@include/);
  assert.ok(lua.startsWith("-- stamp: writes"), "the header stays first");
});

test("a script without directives comes back byte for byte", (t) => {
  if (engineFree(t)) return;
  const plain = "-- KEYS[1] k\r\n-- returns 1\r\nreturn 1\r\n";
  assert.equal(assembleScript("plain-1.lua", plain, includes).lua, plain);
  assert.equal(parseScript("plain-1.lua", plain).sha1, createHash("sha1").update(plain).digest("hex"));
});

test("the contract is checked on the assembled script, and the SHA1 is the assembled text's", (t) => {
  if (engineFree(t)) return;
  const script = parseScript("stamp-1.lua", stamp, includes);
  assert.deepEqual(script.keys, ["string key"]);
  assert.deepEqual(script.args, ["tag"]);
  assert.equal(script.returns, "{tag, ms}");
  assert.deepEqual(script.includes, ["now-ms", "twice"]);
  assert.equal(script.sha1, createHash("sha1").update(script.lua).digest("hex"));
  // The header ends at the first directive, even though the include opens with `--` lines.
  assert.doesNotMatch(script.returns, /now-ms/);
  const reaching = new Map([["reach", "local extra = ARGV[2]\n"]]);
  invalid(
    () =>
      parseScript(
        "reach-1.lua",
        '-- KEYS[1] k\n-- ARGV[1] a\n-- returns 1\n--- @include "reach"\nreturn 1',
        reaching,
      ),
    /reach-1\.lua: the body reads ARGV\[2\] but the header declares 1/,
  );
});

test("a missing include, a cycle and a malformed directive are refused at load, naming the file", (t) => {
  if (engineFree(t)) return;
  const header = "-- KEYS[1] k\n-- returns 1\n";
  invalid(
    () => parseScript("lost-1.lua", `${header}--- @include "nowhere"\nreturn 1`, includes),
    /lost-1\.lua: includes "nowhere", but there is no includes\/nowhere\.lua; known: now-ms, twice/,
  );
  const loop = new Map([
    ["a", '--- @include "b"\n'],
    ["b", '--- @include "a"\n'],
  ]);
  invalid(
    () => parseScript("loop-1.lua", `${header}--- @include "a"\nreturn 1`, loop),
    /loop-1\.lua: include cycle a -> b -> a/,
  );
  invalid(
    () =>
      parseScript("self-1.lua", `${header}--- @include "a"\nreturn 1`, new Map([["a", '--- @include "a"']])),
    /include cycle a -> a/,
  );
  invalid(
    () => parseScript("bad-1.lua", `${header}--- @include now-ms\nreturn 1`, includes),
    /bad-1\.lua: cannot read "--- @include now-ms"; write --- @include "kebab-name"/,
  );
  invalid(
    () =>
      parseScript("deep-1.lua", `${header}--- @include "a"\nreturn 1`, new Map([["a", '--- @include "z"']])),
    /includes "z" \(in include "a"\)/,
  );
});

test("fromDir reads includes/ beside the scripts, or includesDir; a missing folder holds none", async (t) => {
  if (engineFree(t)) return;
  await withDir(
    { "stamp-1.lua": stamp, "includes/now-ms.lua": nowMs, "includes/twice.lua": twice },
    async (dir) => {
      const registry = await ScriptRegistry.fromDir(dir);
      assert.deepEqual(registry.names(), ["stamp"], "includes are not scripts");
      assert.deepEqual(registry.get("stamp").includes, ["now-ms", "twice"]);
      assert.equal((await loadIncludes(`${dir}/none`)).size, 0);
    },
  );
  await withDir(
    { "a/stamp-1.lua": stamp, "shared/now-ms.lua": nowMs, "shared/twice.lua": twice },
    async (dir) => {
      await assert.rejects(
        ScriptRegistry.fromDir(`${dir}/a`),
        /stamp-1\.lua: includes "now-ms", but there is no/,
      );
      const registry = await ScriptRegistry.fromDir(`${dir}/a`, { includesDir: `${dir}/shared` });
      assert.deepEqual(registry.get("stamp").includes, ["now-ms", "twice"]);
    },
  );
  await withDir({ "includes/Bad_Name.lua": "" }, async (dir) => {
    await assert.rejects(loadIncludes(`${dir}/includes`), /name an include <kebab-name>\.lua/);
  });
});

test("Redis runs the assembled script by its SHA1", { timeout: 20_000 }, async (t) => {
  const url = await requireRedis({ skip: (reason) => t.skip(reason) });
  if (!url) return;
  await withDir(
    { "stamp-1.lua": stamp, "includes/now-ms.lua": nowMs, "includes/twice.lua": twice },
    async (dir) => {
      const redis = await connectRedis({ url, commandTimeoutMs: 5_000 });
      const key = uniqueName("infra-include");
      try {
        const registry = await ScriptRegistry.fromDir(dir);
        await registry.loadAll(redis); // SCRIPT LOAD answers the SHA1 computed here, or loadAll throws
        const [tag, ms, positive] = (await registry.run(redis, "stamp", [key], ["x"])) as [
          string,
          number,
          number,
        ];
        assert.equal(tag, "x");
        assert.equal(Number(await redis.get(key)), ms);
        assert.equal(positive, 1);
      } finally {
        await redis.del(key);
        await closeRedis(redis);
      }
    },
  );
});
