/**
 * Fixture repositories for the CLI's end-to-end tests: a temp directory with a
 * workspace package.json and tiny systems whose `main.ts` serve `/healthz` on
 * PORT, plus a way to run the real `casebook` as a child process (CASEBOOK_ROOT
 * points it at the fixture).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

export const binPath = join(import.meta.dirname, "..", "src", "bin.ts");

/** Bound on any one CLI run in these tests; a hang fails the test instead of the suite. */
export const cliTimeoutMs = 30_000;

export interface FixtureSystem {
  name: string;
  /** The `casebook` field; `port` defaults to 8101 + index (never bound: tests override ports). */
  manifest?: Record<string, unknown>;
  /** Replaces the whole package.json text, for malformed-file tests. */
  packageJson?: string;
  /** Files relative to the system folder. */
  files?: Record<string, string>;
}

/** A service that writes its pid, serves /healthz (200 + what it was given), and stops on SIGTERM. */
export const healthyMain = `
import { createServer } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
const data = process.env.CASEBOOK_DATA;
writeFileSync(join(data, "pid"), String(process.pid));
const given = { argv: process.argv.slice(2), port: process.env.PORT, host: process.env.HOST, data,
  databaseUrl: process.env.DATABASE_URL ?? null, greeting: process.env.GREETING ?? null };
const server = createServer((req, res) => {
  if (req.url === "/healthz") { res.writeHead(200, { "content-type": "application/json" }); res.end(JSON.stringify(given)); return; }
  if (req.url === "/quit") { res.end("bye"); setImmediate(() => process.exit(4)); return; }
  res.writeHead(404); res.end();
});
server.listen(Number(process.env.PORT), process.env.HOST, () => {
  console.log(JSON.stringify({ level: 30, time: Date.now(), msg: "listening", port: Number(process.env.PORT) }));
  console.error("ready on stderr too");
});
process.on("SIGTERM", () => {
  server.closeAllConnections();
  server.close(() => { writeFileSync(join(data, "stopped"), "SIGTERM"); process.exit(0); });
});
`;

/**
 * A service whose /healthz answers, as JSON, the variables the CLI's wiring gave it
 * (`{ field: "VARIABLE" }` → `{ field: value or null }`), and stops on SIGTERM.
 */
export function envEchoMain(fields: Record<string, string>): string {
  const read = Object.entries(fields)
    .map(([field, variable]) => `${JSON.stringify(field)}: process.env[${JSON.stringify(variable)}] ?? null`)
    .join(", ");
  return `
import { createServer } from "node:http";
const given = { ${read} };
const server = createServer((req, res) => { res.writeHead(200, { "content-type": "application/json" }); res.end(JSON.stringify(given)); });
server.listen(Number(process.env.PORT), process.env.HOST);
process.on("SIGTERM", () => { server.closeAllConnections(); server.close(() => process.exit(0)); });
`;
}

/** Waits until WAIT_FOR_URL answers, then dies the way a service with a bad config does. */
export const crashAfterPeerMain = `
const deadline = Date.now() + 20_000;
while (Date.now() < deadline) {
  try { if ((await fetch(process.env.WAIT_FOR_URL)).ok) break; } catch {}
  await new Promise((r) => setTimeout(r, 50));
}
console.error("connecting to the database…");
console.error("boom: cannot open the database at /nowhere");
process.exit(3);
`;

/** Listens but never becomes healthy. */
export const unhealthyMain = `
import { createServer } from "node:http";
const server = createServer((req, res) => { res.writeHead(503); res.end("not yet"); });
server.listen(Number(process.env.PORT), process.env.HOST);
console.error("still warming up");
process.on("SIGTERM", () => { server.closeAllConnections(); server.close(() => process.exit(0)); });
`;

/** Healthy, but ignores SIGTERM: only SIGKILL stops it. */
export const stubbornMain = healthyMain.replace(
  /process\.on\("SIGTERM"[\s\S]*$/,
  'process.on("SIGTERM", () => {});\n',
);

/** Prints what it was given and exits with `--exit <code>`. */
export const benchMain = `
const argv = process.argv.slice(2);
console.log(JSON.stringify({ argv, data: process.env.CASEBOOK_DATA, greeting: process.env.GREETING ?? null }));
const at = argv.indexOf("--exit");
process.exit(at === -1 ? 0 : Number(argv[at + 1]));
`;

export function makeFixtureRoot(systems: readonly FixtureSystem[]): string {
  // A directory of its own around the root: the CLI reads `../shared` beside a root, and a
  // `shared` directory left in the system's tmpdir (another run's copy) must not become the map.
  const root = join(mkdtempSync(join(tmpdir(), "casebook-cli-")), "repo");
  mkdirSync(root);
  writeFileSync(
    join(root, "package.json"),
    JSON.stringify({ name: "fixture", private: true, workspaces: ["systems/*"] }),
  );
  mkdirSync(join(root, "systems"));
  systems.forEach((system, index) => {
    const dir = join(root, "systems", system.name);
    mkdirSync(dir, { recursive: true });
    const manifest = {
      title: `fixture ${system.name}`,
      status: "working",
      port: 8101 + index,
      ...system.manifest,
    };
    const pkg = { name: `@casebook/${system.name}`, private: true, type: "module", casebook: manifest };
    writeFileSync(join(dir, "package.json"), system.packageJson ?? JSON.stringify(pkg, null, 2));
    for (const [file, text] of Object.entries(system.files ?? {})) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
  });
  return root;
}

export function removeFixtureRoot(root: string): void {
  rmSync(dirname(root), { recursive: true, force: true });
}

/** A port the OS just handed out, then released: free unless another process races for it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The environment of a CLI run: the test's own, minus anything that would leak into the fixture. */
export function cliEnv(root: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) {
    if (key.startsWith("CASEBOOK_") || ["PORT", "HOST", "DATABASE_URL", "REDIS_URL"].includes(key))
      delete env[key];
  }
  return { ...env, NO_COLOR: "1", CASEBOOK_ROOT: root, ...extra };
}

export interface CliRun {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once stdout+stderr match `pattern`; rejects on timeout or when the CLI exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code (128 + n for a signal), within `cliTimeoutMs`. */
  exited: Promise<number>;
}

/** `lifetimeMs`: how long the CLI may run before it is killed (default cliTimeoutMs). */
export function startCli(args: readonly string[], env: NodeJS.ProcessEnv, lifetimeMs = cliTimeoutMs): CliRun {
  const child = spawn(process.execPath, [binPath, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  let closed = false;
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of listeners) listener();
  };
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
    notify();
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    err += chunk;
    notify();
  });
  const exited = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`casebook ${args.join(" ")} did not exit within ${lifetimeMs} ms\n${out}\n${err}`));
    }, lifetimeMs);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      closed = true;
      notify();
      resolve(code ?? 128 + (signal === "SIGKILL" ? 9 : 15));
    });
  });
  const waitFor = (pattern: RegExp, timeoutMs = cliTimeoutMs) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (pattern.test(out + err)) done(resolve);
        else if (closed) {
          done(() =>
            reject(
              new Error(`CLI exited before printing ${pattern}\n--- stdout\n${out}\n--- stderr\n${err}`),
            ),
          );
        }
      };
      const timer = setTimeout(
        () =>
          done(() =>
            reject(new Error(`no ${pattern} within ${timeoutMs} ms\n--- stdout\n${out}\n--- stderr\n${err}`)),
          ),
        timeoutMs,
      );
      const done = (finish: () => void) => {
        clearTimeout(timer);
        listeners.delete(check);
        finish();
      };
      listeners.add(check);
      check();
    });
  return { child, stdout: () => out, stderr: () => err, waitFor, exited };
}

/**
 * `casebook up` over a fixture root with each named service on a free port of its own, until
 * "system(s) up"; stopped when the test ends. `given(name)` reads what that service's
 * /healthz answers (an `envEchoMain`'s variables).
 */
export async function upOnFreePorts(
  t: { after(fn: () => Promise<void>): void },
  root: string,
  names: readonly string[],
  args: readonly string[] = [],
): Promise<{
  ports: Record<string, number>;
  given(name: string): Promise<Record<string, string | null>>;
  /** Resolves once the CLI's stdout matches. */
  printed(pattern: RegExp): Promise<unknown>;
}> {
  const ports: Record<string, number> = {};
  for (const name of names) ports[name] = await freePort();
  const portArgs = names.flatMap((name) => ["--port", `${name}=${ports[name]}`]);
  const cli = startCli(["up", ...args, ...portArgs, "--logs", "raw"], cliEnv(root));
  t.after(async () => {
    cli.child.kill("SIGTERM");
    await cli.exited;
  });
  await cli.waitFor(/system\(s\) up/);
  const given = async (name: string) =>
    (await (await fetch(`http://127.0.0.1:${ports[name]}/healthz`)).json()) as Record<string, string | null>;
  return { ports, given, printed: (pattern) => cli.waitFor(pattern) };
}

/** Runs the CLI to completion. */
export async function runCli(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = startCli(args, env);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

/** True while a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

export function readPid(root: string, name: string): number {
  return Number(readFileSync(join(root, ".casebook-data", name, "pid"), "utf8"));
}
