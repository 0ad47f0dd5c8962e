import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { defineBenchArgs, flag } from "../src/bench-args.ts";
import { findRow, goalLine, percentileLabel, scenarioRows } from "../src/bench-rows.ts";

class ArgsError extends Error {
  readonly flag: string;
  constructor(message: string, flag: string) {
    super(message);
    this.flag = flag;
  }
}

const cli = defineBenchArgs({
  flags: {
    json: flag.boolean({ help: "JSON lines only" }),
    only: flag.choiceList(["closed", "open", "memory"], { help: "comma-separated subset" }),
    clients: flag.integerList({ min: 1, max: 64, default: [8, 16], help: "client counts" }),
    durationMs: flag.integer({ min: 100, max: 600_000, default: 5_000, help: "measured time per run" }),
    ratePerS: flag.integer({
      name: "rate",
      min: 0,
      max: 10,
      default: 0,
      help: "open-loop rate (default: half the best; {min}..{max})\nsecond line",
    }),
    seed: flag.string({ default: "s", value: "TEXT", help: "seed" }),
    mode: flag.choice(["fast", "exact"], { default: "fast", value: "MODE", help: "how to run" }),
    help: flag.boolean({ short: "h", label: "-h, --help", help: "this text" }),
  },
  invalid: (detail, name) => new ArgsError(detail, name),
});

describe("bench-args", () => {
  test("defaults, typed values, kebab-case names and an explicit name", () => {
    const args = cli.parse([]);
    assert.deepEqual(args, {
      json: false,
      only: ["closed", "open", "memory"],
      clients: [8, 16],
      durationMs: 5_000,
      ratePerS: 0,
      seed: "s",
      mode: "fast",
      help: false,
    });
    const set = cli.parse([
      "--json",
      "--only",
      "open,closed",
      "--clients",
      "16,4,16",
      "--duration-ms",
      "1_000",
    ]);
    assert.deepEqual(set.only, ["closed", "open"], "the choices' order, not the command line's");
    assert.deepEqual(set.clients, [4, 16], "deduplicated and sorted");
    assert.equal(set.durationMs, 1_000);
    assert.equal(cli.parse(["--rate", "7", "-h"]).ratePerS, 7);
    assert.equal(cli.parse(["-h"]).help, true);
    assert.equal(cli.parse(["--mode", "exact"]).mode, "exact");
  });

  test("a bad flag throws the bench's own error naming the flag", () => {
    const cases: Array<[string[], string, RegExp]> = [
      [["--duration-ms", "5"], "duration-ms", /--duration-ms: must be an integer in \[100, 600000\], got 5/],
      [["--duration-ms", "1e3"], "duration-ms", /got 1e3/],
      [["--duration-ms", "-5"], "argv", /--duration-ms/],
      [["--rate", "11"], "rate", /--rate/],
      [["--clients", "8,0"], "clients", /--clients: .* got 0/],
      [["--only", "open,sagas"], "only", /--only: sagas is not one of closed, open, memory/],
      [["--mode", "fast,exact"], "mode", /--mode: fast,exact is not one of fast, exact/],
      [["--bogus"], "argv", /Unknown option '--bogus'; see --help/],
      [["--rate"], "argv", /argument missing/],
    ];
    for (const [argv, name, message] of cases) {
      assert.throws(
        () => cli.parse(argv),
        (error: unknown) => error instanceof ArgsError && error.flag === name && message.test(error.message),
        argv.join(" "),
      );
    }
  });

  test("help lines come from the declaration: column, bounds, placeholders, continuation lines", () => {
    assert.equal(
      cli.flagHelp(),
      [
        "  --json              JSON lines only",
        "  --only LIST         comma-separated subset",
        "  --clients LIST      client counts (default 8,16; each 1..64)",
        "  --duration-ms N     measured time per run (default 5000; 100..600000)",
        "  --rate N            open-loop rate (default: half the best; 0..10)",
        "                      second line",
        "  --seed TEXT         seed",
        "  --mode MODE         how to run (one of fast, exact; default fast)",
        "  -h, --help          this text",
      ].join("\n"),
    );
    const narrow = defineBenchArgs({
      flags: { rounds: flag.integer({ min: 1, max: 21, default: 3, value: "<n>", help: "rounds" }) },
      helpColumn: 8,
      helpBounds: false,
      invalid: (detail) => new Error(detail),
    });
    assert.equal(narrow.flagHelp(), "  --rounds <n>  rounds (default 3)", "a long label keeps two spaces");
    const presets = defineBenchArgs({
      flags: { json: flag.json(), help: flag.help() },
      invalid: (detail) => new Error(detail),
    });
    assert.equal(
      presets.flagHelp(),
      "  --json              JSON lines only ({system, scenario, metric, unit, value, peer, peer_value, ratio})\n  -h, --help          this text",
    );
    assert.deepEqual(presets.parse(["-h", "--json"]), { json: true, help: true });
  });
});

describe("bench-rows", () => {
  test("scenario rows: peer values, tidying, counts and percentiles", () => {
    const row = scenarioRows({ system: "s", scenario: "c=1", peer: "pg", tidy: true });
    const throughput = row.value("throughput", "ops/s", 1234.56, { peer: 617.2 });
    assert.equal(throughput.value, 1235);
    assert.equal(throughput.peer, "pg");
    assert.equal(throughput.ratio, 2.0016);
    const errors = row.count("errors", 3);
    assert.equal(errors.direction, "lower-is-better");
    assert.equal(errors.unit, "count");
    const latency = row.percentiles(
      "latency",
      ["p50", "p999", "max"],
      { p50: 1.23456, p999: 9, max: 12 },
      {
        peer: { p50: 2, p999: 10, max: 20 },
      },
    );
    assert.deepEqual(
      latency.map((r) => [r.metric, r.unit, r.value, r.peer_value]),
      [
        ["latency p50", "ms", 1.23, 2],
        ["latency p99.9", "ms", 9, 10],
        ["latency max", "ms", 12, 20],
      ],
    );
    assert.equal(scenarioRows({ system: "s", scenario: "x" }).value("t", "ms", 1.23456).value, 1.23456);
    assert.equal(percentileLabel("p99"), "p99");
  });

  test("findRow and goalLine", () => {
    const row = scenarioRows({ system: "s", scenario: "drain, 1 worker process" });
    const rows = [row.value("throughput", "ops/s", 5), row.value("latency p99", "ms", 2)];
    assert.equal(findRow(rows, { metric: "latency p99" })?.value, 2);
    assert.equal(
      findRow(rows, { metric: "throughput", scenario: (s) => s.endsWith("1 worker process") })?.value,
      5,
    );
    assert.equal(findRow(rows, { scenario: "other" }), undefined);
    assert.equal(goalLine("goal p99 < 2 ms", "1.5 ms", true), "- goal p99 < 2 ms: 1.5 ms — met");
    assert.equal(goalLine("goal x", "0.5×", false, " (note)"), "- goal x: 0.5× — NOT met (note)");
  });
});
