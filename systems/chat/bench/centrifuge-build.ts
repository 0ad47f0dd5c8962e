/**
 * Builds the bench's Centrifuge side (bench/centrifuge-server/main.go) offline: Go in GOPATH
 * mode over the Go sources Debian installs under /usr/share/gocode — the centrifuge 0.15
 * library and the four dependencies its package forgets to declare — into a temp dir of its
 * own, with a build cache there too, once per bench run. No module proxy is reached
 * (GO111MODULE=off, GOPROXY=off) and no C compiler is needed (CGO_ENABLED=0). When `go` or a
 * package is missing, nothing is built and the answer names the one `apt-get install` line
 * that brings them all: the bench then runs without that side, and CI (which installs no Go)
 * never needs it.
 *
 * @example
 * const build = await buildCentrifugeServer({ log: benchLog });
 * if (!build.ok) benchLog(`centrifuge: not run — ${build.reason}`);
 * else try { await startCentrifugeSide(engines, { servers: 2, program: build.program }); } finally { await build.remove(); }
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ownTempDir } from "@casebook/lab/child-reaper";
import { findExecutable } from "@casebook/lab/executables";

/** Where Debian's golang-*-dev packages put their sources (a GOPATH). */
export const DEBIAN_GOPATH = "/usr/share/gocode";

/** Every Go source the server imports beyond the standard library, and its Debian package. */
export const CENTRIFUGE_GO_SOURCES: readonly { importPath: string; debianPackage: string }[] = [
  {
    importPath: "github.com/centrifugal/centrifuge",
    debianPackage: "golang-github-centrifugal-centrifuge-dev",
  },
  // Imported by centrifuge 0.15 but not among its package's Depends.
  { importPath: "github.com/centrifugal/protocol", debianPackage: "golang-github-centrifugal-protocol-dev" },
  { importPath: "github.com/FZambia/eagle", debianPackage: "golang-github-fzambia-eagle-dev" },
  { importPath: "github.com/igm/sockjs-go/v3", debianPackage: "golang-github-igm-sockjs-go-dev" },
  { importPath: "github.com/mna/redisc", debianPackage: "golang-github-mna-redisc-dev" },
];

/** The one line that installs Go (1.19 on bookworm) and every source the build needs. */
export const CENTRIFUGE_APT_LINE = `apt-get install -y golang-go ${CENTRIFUGE_GO_SOURCES.map((s) => s.debianPackage).join(" ")}`;

const serverSource = fileURLToPath(new URL("./centrifuge-server/main.go", import.meta.url));
/** A cold build (empty cache) of the library and its dependencies took ~25 s on 2 cores. */
const BUILD_TIMEOUT_MS = 300_000;
const OUTPUT_TAIL_CHARS = 4_000;

export type CentrifugeBuild =
  | { ok: true; program: string; goVersion: string; remove(): Promise<void> }
  | { ok: false; reason: string };

/** Why the server cannot be built here (no `go`, a missing package), or undefined when it can. */
export function centrifugeMissing(gopath = DEBIAN_GOPATH): string | undefined {
  const missing = CENTRIFUGE_GO_SOURCES.filter((s) => !existsSync(join(gopath, "src", s.importPath)));
  const noGo = findExecutable("go") === undefined;
  if (!noGo && missing.length === 0) return undefined;
  const what = [
    ...(noGo ? ["no `go` on PATH"] : []),
    ...(missing.length > 0
      ? [`no Go sources of ${missing.map((s) => s.debianPackage).join(", ")} under ${gopath}`]
      : []),
  ].join(" and ");
  return `${what}; install Go and every source the build needs with: ${CENTRIFUGE_APT_LINE}`;
}

function runGo(
  go: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ error: Error | null; output: string }> {
  return new Promise((resolve) => {
    execFile(
      go,
      args,
      { env, timeout: BUILD_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        resolve({ error, output: `${stdout}${stderr}`.trim() });
      },
    );
  });
}

/**
 * Builds the server into a fresh temp dir (removed by `remove()`, or when this process exits);
 * `ok: false` with the reason — and the apt line — when Go or a package is missing or the
 * build fails.
 */
export async function buildCentrifugeServer(
  options: { gopath?: string; log?: (line: string) => void } = {},
): Promise<CentrifugeBuild> {
  const gopath = options.gopath ?? DEBIAN_GOPATH;
  const missing = centrifugeMissing(gopath);
  if (missing !== undefined) return { ok: false, reason: missing };
  const go = findExecutable("go")!;
  const { dir, remove } = await ownTempDir("casebook-centrifuge-");
  const program = join(dir, "centrifuge-server");
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GO111MODULE: "off",
    GOPATH: gopath,
    GOCACHE: join(dir, "cache"),
    GOPROXY: "off",
    GOFLAGS: "",
    CGO_ENABLED: "0",
  };
  const version = await runGo(go, ["version"], env);
  const goVersion = version.output.split(" ")[2] ?? "go";
  options.log?.(`centrifuge: building bench/centrifuge-server with ${goVersion} (GOPATH ${gopath}, offline)`);
  const began = performance.now();
  const build = await runGo(go, ["build", "-trimpath", "-o", program, serverSource], env);
  if (build.error !== null) {
    await remove();
    return {
      ok: false,
      reason: `go build failed (${build.error.message.split("\n")[0]}): ${build.output.slice(-OUTPUT_TAIL_CHARS)}; the sources come from: ${CENTRIFUGE_APT_LINE}`,
    };
  }
  options.log?.(`centrifuge: built in ${((performance.now() - began) / 1_000).toFixed(1)} s`);
  return { ok: true, program, goVersion, remove };
}
