/**
 * One Debian `wrk` run (closed loop, its own process: PEERS.md — a Node load generator would
 * compete with the server for the 2 cores) and the figures the bench reads from its summary:
 * requests/s, the latency percentiles (`--latency`), non-3xx answers and socket errors. An
 * optional Lua script picks each request's path (the zipf scenario); `writeCyclingScript` writes
 * one that sends a list of requests (paths and headers) in turn, pre-formatted once.
 *
 * @example
 * const run = await runWrk({ url: "http://127.0.0.1:8109/abc1234", durationS: 5, connections: 50 });
 * run.requestsPerS; run.p99Ms;
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { ensureExecutable } from "./executables.ts";

const run = promisify(execFile);

export interface WrkRun {
  requestsPerS: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx/3xx answers plus socket errors. */
  errors: number;
}

function ms(value: string, unit: string): number {
  const n = Number(value);
  return unit === "us" ? n / 1_000 : unit === "s" ? n * 1_000 : n;
}

export function parseWrk(output: string): WrkRun {
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(output);
  if (rate === null) throw new Error(`wrk printed no Requests/sec:\n${output}`);
  const pct = (p: string) => {
    const match = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)`, "m").exec(output);
    return match === null ? Number.NaN : ms(match[1]!, match[2]!);
  };
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(output);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const socketErrors = socket === null ? 0 : socket.slice(1).reduce((sum, n) => sum + Number(n), 0);
  return {
    requestsPerS: Number(rate[1]),
    p50Ms: pct("50"),
    p99Ms: pct("99"),
    errors: Number(non2xx?.[1] ?? 0) + socketErrors,
  };
}

export async function runWrk(options: {
  url: string;
  durationS: number;
  connections: number;
  threads?: number;
  script?: string;
}): Promise<WrkRun> {
  const wrk = await ensureExecutable("wrk", { debianPackage: "wrk" });
  const args = [
    `-t${options.threads ?? 2}`,
    `-c${options.connections}`,
    `-d${options.durationS}s`,
    "--latency",
    ...(options.script === undefined ? [] : ["-s", options.script]),
    options.url,
  ];
  const { stdout } = await run(wrk, args, { maxBuffer: 1 << 20 });
  return parseWrk(stdout);
}

/** One request of a cycling script: a path and the headers it carries. */
export interface WrkRequest {
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * A wrk Lua script (and its data file, both in `dir`) that sends `requests` in turn, each thread
 * from a random start so threads do not move in lockstep; resolves the script's path. Paths and
 * header values must not contain tabs or newlines (the data file's separators).
 */
export async function writeCyclingScript(dir: string, requests: readonly WrkRequest[]): Promise<string> {
  if (requests.length === 0) throw new Error("a cycling script needs at least one request");
  const fields = (r: WrkRequest) => [r.path, ...Object.entries(r.headers ?? {}).flat()];
  const lines = requests.map(fields);
  for (const field of lines.flat()) {
    if (/[\t\r\n]/.test(field))
      throw new Error(`a wrk request field holds a tab or newline: ${JSON.stringify(field)}`);
  }
  const data = join(dir, "wrk-requests.tsv");
  await writeFile(data, `${lines.map((l) => l.join("\t")).join("\n")}\n`);
  const script = join(dir, "wrk-requests.lua");
  await writeFile(
    script,
    `local lines = {}
for line in io.lines("${data}") do lines[#lines + 1] = line end
local requests = {}
local i = 0
-- Formatted in init, not at load: wrk sets its Host header in wrk.init, before calling this.
function init(args)
  for _, line in ipairs(lines) do
    local fields = {}
    for field in line:gmatch("[^\\t]+") do fields[#fields + 1] = field end
    local headers = {}
    for k = 2, #fields - 1, 2 do headers[fields[k]] = fields[k + 1] end
    requests[#requests + 1] = wrk.format("GET", fields[1], headers)
  end
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 100000)
  i = math.random(#requests)
end
function request()
  i = i + 1
  if i > #requests then i = 1 end
  return requests[i]
end
`,
  );
  return script;
}
