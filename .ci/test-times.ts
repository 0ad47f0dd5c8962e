/**
 * Times every test file alone (each in its own `node --test` process, N at a time, like
 * `npm test`'s --test-concurrency) and ranks them, so CI's slowest files are known before
 * anyone shrinks anything. With `--closed` it times CI's closed-engine pass instead: the
 * files .ci/engine-test-files.ts prints, with every engine URL on a closed port.
 * On a loaded machine read the wall figures as relative, not absolute; the CPU seconds (user +
 * system of the file's process tree, from /usr/bin/time when present) barely move with the load,
 * and on CI's 2 cores they are what the suite's time is made of.
 *
 * Usage: node .ci/test-times.ts [--closed] [--concurrency 2] [--top 25] [--sort wall|cpu] [--json out.json] [file…]
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, globSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const root = resolve(import.meta.dirname, "..");
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    closed: { type: "boolean", default: false },
    concurrency: { type: "string", default: "2" },
    top: { type: "string", default: "25" },
    sort: { type: "string", default: "wall" },
    json: { type: "string" },
  },
});

const CLOSED_ENV = {
  CASEBOOK_CLOSED_ENGINE_PASS: "1",
  CASEBOOK_TEST_DATABASE_URL: "postgres://postgres@127.0.0.1:1/test",
  CASEBOOK_TEST_REDIS_URL: "redis://127.0.0.1:1",
  CASEBOOK_TEST_NATS_URL: "nats://127.0.0.1:1",
};

function allTestFiles(): string[] {
  return globSync(["packages/*/test/**/*.test.ts", "systems/*/test/**/*.test.ts"], { cwd: root }).sort();
}

function engineTestFiles(): string[] {
  const out = spawnSync(process.execPath, [".ci/engine-test-files.ts"], { cwd: root, encoding: "utf8" });
  return out.stdout.split("\n").filter(Boolean);
}

interface Timing {
  file: string;
  seconds: number;
  /** User + system CPU seconds of the file's process and the children it waited for; NaN without /usr/bin/time. */
  cpu: number;
  pass: number;
  fail: number;
  skipped: number;
  code: number | null;
}

function count(tap: string, what: string): number {
  const match = tap.match(new RegExp(`^# ${what} (\\d+)$`, "m"));
  return match ? Number(match[1]) : 0;
}

const TIME = existsSync("/usr/bin/time") ? "/usr/bin/time" : undefined;
const cpuDir = mkdtempSync(join(tmpdir(), "test-times-"));
process.on("exit", () => rmSync(cpuDir, { recursive: true, force: true }));

function cpuOf(cpuFile: string | undefined): number {
  if (cpuFile === undefined) return Number.NaN;
  try {
    const [user, system] = readFileSync(cpuFile, "utf8").trim().split("\n").at(-1)!.split(" ").map(Number);
    return user! + system!;
  } catch {
    return Number.NaN;
  }
}

function timeOne(file: string): Promise<Timing> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (values.closed) {
    delete env.CASEBOOK_REQUIRE_ENGINES;
    Object.assign(env, CLOSED_ENV);
  }
  const started = performance.now();
  const args = ["--test", "--test-timeout=300000", "--test-reporter=tap", file];
  const cpuFile = TIME === undefined ? undefined : join(cpuDir, `${timings.length}-${Math.random()}`);
  const [command, commandArgs] =
    cpuFile === undefined
      ? [process.execPath, args]
      : [TIME!, ["-q", "-f", "%U %S", "-o", cpuFile, process.execPath, ...args]];
  const child = spawn(command, commandArgs, {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  let tap = "";
  child.stdout.on("data", (chunk: Buffer) => {
    tap += chunk.toString();
  });
  return new Promise((done) => {
    child.on("close", (code) => {
      done({
        file,
        seconds: (performance.now() - started) / 1000,
        cpu: cpuOf(cpuFile),
        pass: count(tap, "pass"),
        fail: count(tap, "fail"),
        skipped: count(tap, "skipped"),
        code,
      });
    });
  });
}

const files = positionals.length > 0 ? positionals : values.closed ? engineTestFiles() : allTestFiles();
const queue = [...files];
const timings: Timing[] = [];
const wallStarted = performance.now();
await Promise.all(
  Array.from({ length: Number(values.concurrency) }, async () => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      const timing = await timeOne(file);
      timings.push(timing);
      process.stderr.write(
        `${timing.seconds.toFixed(1).padStart(7)}s ${timing.cpu.toFixed(1).padStart(6)}cpu ${timing.fail > 0 || timing.code !== 0 ? "FAIL" : "ok  "} ${file}\n`,
      );
      if (values.json) writeFileSync(values.json, JSON.stringify(timings, null, 1));
    }
  }),
);
const wall = (performance.now() - wallStarted) / 1000;
timings.sort((a, b) => (values.sort === "cpu" ? b.cpu - a.cpu : b.seconds - a.seconds));
const sum = timings.reduce((total, t) => total + t.seconds, 0);
const cpuSum = timings.reduce((total, t) => total + t.cpu, 0);
const totals = timings.reduce(
  (total, t) => ({
    pass: total.pass + t.pass,
    fail: total.fail + t.fail,
    skipped: total.skipped + t.skipped,
  }),
  { pass: 0, fail: 0, skipped: 0 },
);
console.log(
  `${files.length} files, wall ${wall.toFixed(0)}s, sum of files ${sum.toFixed(0)}s, CPU ${cpuSum.toFixed(0)}s`,
);
console.log(`pass ${totals.pass}, fail ${totals.fail}, skipped ${totals.skipped}`);
for (const t of timings.slice(0, Number(values.top))) {
  console.log(
    `${t.seconds.toFixed(1).padStart(7)}s ${t.cpu.toFixed(1).padStart(6)}cpu  ${String(t.pass).padStart(4)} pass ${String(t.skipped).padStart(3)} skip  ${t.file}`,
  );
}
const failed = timings.filter((t) => t.fail > 0 || t.code !== 0);
for (const t of failed) console.log(`FAILED: ${t.file} (exit ${t.code}, ${t.fail} failing)`);
process.exitCode = failed.length > 0 ? 1 : 0;
