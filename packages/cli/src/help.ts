/**
 * The help texts of `casebook` and its subcommands, each with examples, and the
 * version. Kept together so the wording stays consistent across commands.
 *
 * @example
 * process.stdout.write(helpText("up"));
 */
import { readFileSync } from "node:fs";

export const commandNames = ["list", "up", "run", "bench", "new", "help"] as const;
export type CommandName = (typeof commandNames)[number];

const envContract = `Each system's main.ts gets: PORT and HOST (where to listen for HTTP),
DATABASE_URL and REDIS_URL (passed through when set; unset = embedded engines),
CASEBOOK_DATA (its own data directory), plus the defaults in its manifest's "env".`;

const texts: Record<CommandName | "top", string> = {
  top: `casebook — list, run and benchmark the Casebook systems

Usage
  casebook <command> [options]

Commands
  list                     the systems and their status (planned ones too)
  up [name…]               start every ready system (or the named ones); what \`npm start\` runs
  run <name> [-- args…]    one system in the foreground (run <name> --help: its settings)
  bench <name> [args…]     a system's benchmark (--json: one JSON object per line)
  new <name>               lay down a new system in the house's shape
  <name> [tool [args…]]    a system's own command-line tools (\`casebook payments\` lists them)
  help [command | system]  this help, one command's, or a system's settings

Options
  -h, --help               show help (also after any command)
  -v, --version            print the version

Environment
  DATABASE_URL             PostgreSQL for every system (default: embedded PGlite)
  REDIS_URL                Redis for every system (default: in-process store)
  CASEBOOK_DATA            data root, one folder per system (default: <repo>/.casebook-data)
  CASEBOOK_ROOT            the repository to use (default: found from the CLI's location)

Examples
  npm start                                  # = casebook up
  npx casebook list
  npx casebook up rate-limiter webhooks
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/test REDIS_URL=redis://127.0.0.1:6379 npx casebook up
  npx casebook run rate-limiter -- --verbose
  npx casebook bench rate-limiter --json
  npx casebook new url-shortener --dry-run
  npx casebook payments reconcile --date 2026-10-22   # a system's tool
`,
  list: `casebook list — the systems and their status

Usage
  casebook list [--json]

Reads every systems/<name>/package.json and its "casebook" manifest, validates it
and shows name, status (working | in progress | planned), port, design, and
whether its main.ts and bench exist, and its tools (\`casebook <name> <tool>\`). Two
manifests on one port are reported (exit 1).

Options
  --json                   one JSON array instead of the table
  -h, --help               show this help

Examples
  npx casebook list
  npx casebook list --json | jq '.[] | select(.status == "working") | .name'
`,
  up: `casebook up — start systems and print what listens where

Usage
  casebook up [name…] [options]

Starts every system that is ready (status not "planned" and its main.ts written),
or only the named ones, each as a Node 24 child on its own port. Waits for each
one's GET /healthz, then prints a table: system, URL, engine (embedded, postgres,
redis). Log lines carry the system's name. Ctrl-C or SIGTERM stops every system
(SIGTERM, then SIGKILL after --stop-timeout-ms) and exits 0. A system that dies or
stays unhealthy during start has its last stderr lines printed; the others are
stopped and the exit code is 1.

Options
  --port <name>=<port>     another port for one system (repeatable; \`console\` for the console)
  --no-console             do not start the web console (first, at http://127.0.0.1:8100)
  --host <address>         address every system listens on (default 127.0.0.1, or CASEBOOK_HOST)
  --health-timeout-ms <n>  bound on waiting for /healthz (default 60000)
  --stop-timeout-ms <n>    grace between SIGTERM and SIGKILL (default 10000)
  --logs <mode>            auto | pretty | raw: compact lines on a terminal, JSON as-is
                           otherwise (default auto; NO_COLOR turns colours off)
  -h, --help               show this help

Environment
  CASEBOOK_PORT_<NAME>     one system's port, e.g. CASEBOOK_PORT_RATE_LIMITER=8150
  DATABASE_URL, REDIS_URL  real engines instead of the embedded ones, for every system
  CASEBOOK_DATA            data root; each system gets <root>/<name>

${envContract}

Examples
  npm start
  npx casebook up rate-limiter webhooks
  npx casebook up --port rate-limiter=8150 --logs raw
  CASEBOOK_PORT_WEBHOOKS=8160 npx casebook up
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/test ACQUIRER_URL=http://127.0.0.1:8154 npx casebook up payments
`,
  run: `casebook run — one system in the foreground

Usage
  casebook run <name> [options] [args…] [-- args…]

Like \`casebook up <name>\`: starts the system, waits for /healthz, prints where it
listens and passes its logs through. Arguments after -- go to its main.ts, and so do
options after the name that casebook does not know (\`casebook run cache --nodes 6\`).
When the system exits on its own, casebook exits with its exit code; Ctrl-C or
SIGTERM stops it and exits 0.

Options
  --port <port>            another port (also PORT=<port> or CASEBOOK_PORT_<NAME>)
  --host <address>         address to listen on (default 127.0.0.1, or CASEBOOK_HOST)
  --health-timeout-ms <n>  bound on waiting for /healthz (default 60000)
  --stop-timeout-ms <n>    grace between SIGTERM and SIGKILL (default 10000)
  --logs <mode>            auto | pretty | raw (default auto)
  -h, --help               show this help

${envContract}

Examples
  npx casebook run rate-limiter
  PORT=8150 npx casebook run rate-limiter
  npx casebook run webhooks --logs raw -- --verbose
  npx casebook run cache --nodes 6 --replicas 1
  REDIS_URL=redis://127.0.0.1:6379 npx casebook run rate-limiter
`,
  bench: `casebook bench — run a system's benchmark

Usage
  casebook bench <name> [args…]

Runs the system's bench entry (casebook.bench in its manifest, default
bench/main.ts) with Node 24 and exits with its exit code. Every argument after
the name goes to the benchmark unchanged, --json and --help included. It prints
a markdown table; with --json one JSON object per line:
{"system","scenario","metric","unit","value","peer","peer_value","ratio"}.
The benchmark gets DATABASE_URL / REDIS_URL when set and CASEBOOK_DATA=<root>/<name>-bench.

Options (before the name)
  -h, --help               show this help

Examples
  npm run bench -- rate-limiter
  npx casebook bench rate-limiter --json > results.jsonl
  npx casebook bench webhooks --help        # the benchmark's own options
`,
  new: `casebook new — lay down a new system in the house's shape

Usage
  casebook new <name> [options]

Writes systems/<name>/ on the map of shared/ARCHITECTURE.md (Layout): package.json
with its "casebook" manifest (status "in progress", a port in 8100–8199 no other
manifest holds), README.md in the house order (Run it, API, Design: mechanism → file,
Claims, Failure modes, Bench) with one row per claim of shared/claims/<name>.md,
src/main.ts (composition root on infra's service base), src/config.ts, src/errors.ts,
src/metrics.ts, src/api/register-api.ts, a test that starts it and checks /healthz,
/readyz, /metrics and --help, and bench/main.ts printing the house rows (a placeholder
scenario, GET /healthz, until the design's own). The other slots (src/domain/,
src/store/, src/workers/, src/clients/…) are listed in its README and appear with their
first real file. Title, seed and port come from the systems table of ARCHITECTURE.md
when the name is there (port 8100 + its row); the options override them. Refused with
exit 2: a name that is not kebab-case or is a casebook command, a system that exists,
a port another manifest holds. Nothing is written unless every check passes. Its
planned row in the root README's systems table becomes "in progress", with a link.

Options
  --title <text>           the design's name, as in the systems table (needed when the
                           name is not in it)
  --seed <ref>             the design text, e.g. "000 §9" (default: the table's)
  --port <port>            its HTTP port in 8100–8199 (default: 8100 + its row, or the
                           lowest free one)
  --dry-run                list the files it would write, and write nothing
  -h, --help               show this help

Examples
  npx casebook new url-shortener
  npx casebook new flash-sale --dry-run
  npx casebook new search --title "full-text search" --seed "005" --port 8150
`,
  help: `casebook help — show help

Usage
  casebook help [command]

Examples
  npx casebook help
  npx casebook help up
`,
};

export function helpText(command: CommandName | "top" = "top"): string {
  return texts[command];
}

/** The CLI's version, from packages/cli/package.json. */
export function cliVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version?: string;
  };
  return pkg.version ?? "0.0.0";
}
