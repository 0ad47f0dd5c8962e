/**
 * The console's front end (`web/`, Preact + uPlot) built by Vite into `dist/web/`, on the
 * install/start path and never committed: `npm start`'s prestart and the console's own start
 * call `ensureWebBuilt`, which builds only when an input is newer than the last build's stamp.
 * The build runs in a child process bounded by `timeoutMs`, its progress lines passed through,
 * so a fresh clone's first start shows what it is doing and a hung build cannot hang the start.
 *
 * @example
 * const result = await ensureWebBuilt({ log: (line) => process.stderr.write(`${line}\n`) });
 * result.built; // true on a fresh clone, false once dist/web is up to date
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

export const packageDir = join(import.meta.dirname, "..");
export const webDir = join(packageDir, "web");
export const distDir = join(packageDir, "dist", "web");
/** Written last by a successful build: its inputs' newest mtime, so a half-written dist is rebuilt. */
const stampFile = join(distDir, ".built-from");
/** A cold Vite build of this app takes seconds; a loaded 2-core machine gets a wide margin. */
export const defaultBuildTimeoutMs = 180_000;
/** Files walked to find the newest input; the app is a handful of files. */
const maxInputFiles = 500;

export interface EnsureWebBuiltOptions {
  log(line: string): void;
  timeoutMs?: number;
  /** Build even when the stamp says the output is current. */
  force?: boolean;
}

/** The newest mtime (ms) over web/ and the Vite config inputs: what a build depends on. */
export function newestInputMs(): number {
  let newest = statSync(join(packageDir, "package.json")).mtimeMs;
  let seen = 0;
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (++seen > maxInputFiles) throw new Error(`web/ holds more than ${maxInputFiles} files`);
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  walk(webDir);
  return Math.floor(newest);
}

/** True when dist/web was built from inputs no older than the current ones. */
export function webBuildIsCurrent(): boolean {
  if (!existsSync(stampFile)) return false;
  const stamp = Number(readFileSync(stampFile, "utf8").trim());
  return Number.isFinite(stamp) && stamp >= newestInputMs();
}

export async function ensureWebBuilt(
  options: EnsureWebBuiltOptions,
): Promise<{ built: boolean; ms: number }> {
  const started = performance.now();
  if (!options.force && webBuildIsCurrent()) return { built: false, ms: 0 };
  const timeoutMs = options.timeoutMs ?? defaultBuildTimeoutMs;
  options.log(`console: building the web front end with Vite (bounded at ${timeoutMs / 1000} s)…`);
  await runBuildChild(timeoutMs, options.log);
  const ms = Math.round(performance.now() - started);
  options.log(`console: web front end built in ${(ms / 1000).toFixed(1)} s`);
  return { built: true, ms };
}

/** `node src/vite-build.ts` in a child: Vite's own memory and handles end with it. */
function runBuildChild(timeoutMs: number, log: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(packageDir, "src", "vite-build.ts")], {
      cwd: packageDir,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1" },
    });
    const tail: string[] = [];
    const onData = (chunk: Buffer): void => {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line.trim() === "") continue;
        log(`console: vite | ${line}`);
        tail.push(line);
        if (tail.length > 20) tail.shift();
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the console's Vite build did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else
        reject(
          new Error(`the console's Vite build failed (${signal ?? `exit ${code}`}):\n${tail.join("\n")}`),
        );
    });
  });
}
