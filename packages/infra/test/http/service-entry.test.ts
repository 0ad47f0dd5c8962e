import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { field, loadConfig } from "@casebook/kit/config";
import { CasebookError } from "@casebook/kit/errors";
import { type EntryIo, runServiceEntry, serviceHelp } from "../../src/http/service-entry.ts";
import { sqlErrors } from "../../src/sql/sql-errors.ts";

const schema = {
  port: field.int({ env: "PORT", default: 8100, min: 0, max: 65535, description: "HTTP port" }),
  url: field.url({ env: "DATABASE_URL", protocols: ["postgres:"], description: "PostgreSQL" }),
};

function recorder() {
  const out: string[] = [];
  const err: string[] = [];
  const codes: number[] = [];
  const io: EntryIo = { out: (t) => out.push(t), err: (t) => err.push(t), fail: (c) => codes.push(c) };
  return { io, out, err, codes };
}

const quietLog = { info() {}, warn() {}, error() {}, debug() {} } as never;

test("--help prints what it is, how to start it and every setting with its default, and starts nothing", async () => {
  const r = recorder();
  let started = false;
  await runServiceEntry({
    name: "demo",
    summary: "a demo service",
    schema,
    notes: "See README.md.",
    argv: ["--help"],
    io: r.io,
    start: async () => {
      started = true;
      return { close: async () => {}, log: quietLog };
    },
  });
  assert.equal(started, false);
  const text = r.out.join("");
  assert.match(text, /^demo — a demo service\n\nUsage\n {2}npx casebook run demo\n/);
  assert.match(text, / {2}PORT {10}default 8100 {2}HTTP port \(an integer 0\.\.65535\)\n/);
  assert.match(text, / {2}DATABASE_URL {2}optional {6}PostgreSQL/);
  assert.match(text, /See README\.md\.\n$/);
  assert.equal(
    text,
    serviceHelp({ name: "demo", summary: "a demo service", schema, notes: "See README.md." }),
  );
});

test("a bad setting is one message naming it and exit 2; a typed start failure one line and exit 1", async () => {
  const bad = recorder();
  await runServiceEntry({
    name: "demo",
    summary: "s",
    schema,
    argv: [],
    io: bad.io,
    start: async () => {
      loadConfig(schema, { env: { PORT: "eighty" } });
      throw new Error("unreachable");
    },
  });
  assert.deepEqual(bad.codes, [2]);
  assert.equal(
    bad.err.join(""),
    'demo: Invalid configuration (1 problem):\n  PORT="eighty": expected an integer 0..65535\nRun it with --help for every setting.\n',
  );

  const down = recorder();
  await runServiceEntry({
    name: "demo",
    summary: "s",
    schema,
    argv: [],
    io: down.io,
    start: async () => {
      throw sqlErrors.create("SQL_UNAVAILABLE", {
        detail: "PostgreSQL at 127.0.0.1:1 refused the connection.",
        cause: new Error("connect ECONNREFUSED 127.0.0.1:1"),
      });
    },
  });
  assert.deepEqual(down.codes, [1]);
  assert.match(
    down.err.join(""),
    /^demo: could not start: SQL_UNAVAILABLE: PostgreSQL at 127\.0\.0\.1:1 refused the connection\. \(connect ECONNREFUSED 127\.0\.0\.1:1\)\n$/,
  );
  assert.equal(down.err.join("").split("\n").length, 2, "one line");
});

test("an untyped error at start is a bug: it is thrown with its stack", async () => {
  const r = recorder();
  const bug = new TypeError("x is undefined");
  await assert.rejects(
    runServiceEntry({
      name: "demo",
      summary: "s",
      schema,
      argv: [],
      io: r.io,
      start: async () => {
        throw bug;
      },
    }),
    (error) => error === bug && !(error instanceof CasebookError),
  );
  assert.deepEqual(r.codes, []);
});

test("as a process: a bad setting exits 2 with no stack trace on stderr", async (t) => {
  const src = (...parts: string[]) => JSON.stringify(join(import.meta.dirname, "..", "..", "..", ...parts));
  const dir = await mkdtemp(join(tmpdir(), "service-entry-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const entry = join(dir, "entry.ts");
  await writeFile(
    entry,
    `import { field, loadConfig } from ${src("kit", "src", "config.ts")};
import { runServiceEntry } from ${src("infra", "src", "http", "service-entry.ts")};
const schema = { port: field.int({ env: "PORT", default: 1, min: 0, max: 65535, description: "HTTP port" }) };
await runServiceEntry({ name: "fixture", summary: "s", schema, start: async () => {
  loadConfig(schema, { env: process.env });
  throw new Error("unreachable");
} });
`,
  );
  const failed = await promisify(execFile)(process.execPath, [entry], {
    env: { ...process.env, PORT: "x" },
  }).then(
    () => assert.fail("must exit non-zero"),
    (error: { code: number; stderr: string }) => error,
  );
  assert.equal(failed.code, 2);
  assert.equal(
    failed.stderr,
    'fixture: Invalid configuration (1 problem):\n  PORT="x": expected an integer 0..65535\nRun it with --help for every setting.\n',
  );
});
