import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ConfigError,
  describeConfig,
  field,
  formatDurationMs,
  loadConfig,
  parseDurationMs,
} from "../src/config.ts";
import { kitErrors } from "../src/kit-errors.ts";

const schema = {
  port: field.int({ env: "PORT", default: 8100, min: 1, max: 65535, description: "HTTP port to listen on" }),
  databaseUrl: field.url({
    env: "DATABASE_URL",
    protocols: ["postgres", "postgresql:"],
    required: true,
    description: "PostgreSQL connection URL",
  }),
  redisUrl: field.url({
    env: "REDIS_URL",
    protocols: ["redis"],
    description: "Redis URL; in-process store if unset",
  }),
  logLevel: field.enum(["debug", "info", "warn", "error"], {
    env: "LOG_LEVEL",
    default: "info",
    description: "Log level",
  }),
  sampleRatio: field.number({
    env: "SAMPLE_RATIO",
    default: 0.1,
    min: 0,
    max: 1,
    description: "Trace sampling",
  }),
  metrics: field.bool({ env: "METRICS_ENABLED", default: true, description: "Serve /metrics" }),
  shutdownTimeoutMs: field.durationMs({
    env: "SHUTDOWN_TIMEOUT",
    default: 10_000,
    min: 1_000,
    max: 3_600_000,
    description: "How long to drain on SIGTERM",
  }),
  apiKey: field.string({ env: "ADMIN_API_KEY", minLength: 32, secret: true, description: "Admin API key" }),
  worker: {
    maxBatch: field.int({
      env: "WORKER_MAX_BATCH",
      default: 100,
      min: 1,
      max: 10_000,
      description: "Rows per batch",
    }),
    name: field.string({
      env: "WORKER_NAME",
      default: "worker",
      pattern: /^[a-z-]+$/,
      description: "Worker name",
    }),
  },
};

const minimalEnv = { DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test" };

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected ConfigError, got ${String(error)}`);
    return error;
  }
  assert.fail("expected a ConfigError");
}

test("defaults fill what no source sets, and the result is typed and frozen", () => {
  const config = loadConfig(schema, { env: minimalEnv });
  assert.deepEqual(config, {
    port: 8100,
    databaseUrl: "postgres://postgres@127.0.0.1:5432/test",
    redisUrl: undefined,
    logLevel: "info",
    sampleRatio: 0.1,
    metrics: true,
    shutdownTimeoutMs: 10_000,
    apiKey: undefined,
    worker: { maxBatch: 100, name: "worker" },
  });
  // Type-level checks: these assignments fail to compile if inference is wrong.
  const port: number = config.port;
  const level: "debug" | "info" | "warn" | "error" = config.logLevel;
  const redis: string | undefined = config.redisUrl;
  const db: string = config.databaseUrl;
  const batch: number = config.worker.maxBatch;
  // @ts-expect-error an optional setting may be undefined
  const notNarrowed: string = config.redisUrl;
  assert.ok([port, level, redis, db, batch, notNarrowed]);
  assert.ok(Object.isFrozen(config) && Object.isFrozen(config.worker));
});

test("env overrides the file, and the file overrides defaults (nested groups too)", () => {
  const config = loadConfig(schema, {
    env: { ...minimalEnv, PORT: "9000", WORKER_MAX_BATCH: "7" },
    file: { port: 8200, logLevel: "debug", metrics: false, worker: { maxBatch: 50, name: "relay" } },
  });
  assert.equal(config.port, 9000);
  assert.equal(config.logLevel, "debug");
  assert.equal(config.metrics, false);
  assert.equal(config.worker.maxBatch, 7);
  assert.equal(config.worker.name, "relay");
});

test("every kind parses its accepted spellings", () => {
  const config = loadConfig(schema, {
    env: {
      ...minimalEnv,
      PORT: " 8101 ",
      REDIS_URL: "redis://127.0.0.1:6379",
      LOG_LEVEL: "warn",
      SAMPLE_RATIO: "2.5e-1",
      METRICS_ENABLED: "Off",
      SHUTDOWN_TIMEOUT: "1m30s",
      ADMIN_API_KEY: "k".repeat(32),
    },
  });
  assert.equal(config.port, 8101);
  assert.equal(config.redisUrl, "redis://127.0.0.1:6379");
  assert.equal(config.logLevel, "warn");
  assert.equal(config.sampleRatio, 0.25);
  assert.equal(config.metrics, false);
  assert.equal(config.shutdownTimeoutMs, 90_000);
  assert.equal(config.apiKey, "k".repeat(32));
  for (const [text, expected] of [
    ["true", true],
    ["1", true],
    ["YES", true],
    ["on", true],
    ["false", false],
    ["0", false],
    ["no", false],
  ] as const) {
    assert.equal(
      loadConfig(schema, { env: { ...minimalEnv, METRICS_ENABLED: text } }).metrics,
      expected,
      text,
    );
  }
});

test("one ConfigError names every bad variable, its value, and what is expected", () => {
  const error = configError(() =>
    loadConfig(schema, {
      env: {
        PORT: "abc",
        LOG_LEVEL: "verbose",
        SAMPLE_RATIO: "2",
        SHUTDOWN_TIMEOUT: "soon",
        METRICS_ENABLED: "y",
      },
    }),
  );
  assert.deepEqual(
    error.problems.map((p) => p.message),
    [
      'PORT="abc": expected an integer 1..65535',
      "DATABASE_URL is required: expected a postgres: or postgresql: URL (PostgreSQL connection URL)",
      'LOG_LEVEL="verbose": expected one of debug, info, warn, error',
      'SAMPLE_RATIO="2": expected a number 0..1',
      'METRICS_ENABLED="y": expected a boolean (true/false, 1/0, yes/no, on/off)',
      'SHUTDOWN_TIMEOUT="soon": expected a duration 1s..1h (like 250ms, 30s or 1h30m)',
    ],
  );
  assert.match(
    error.message,
    /^Invalid configuration \(6 problems\):\n {2}PORT="abc": expected an integer 1\.\.65535\n/,
  );
  assert.equal(error.code, "CONFIG_INVALID");
  assert.ok(kitErrors.is(error, "CONFIG_INVALID"));
  assert.deepEqual(error.fields["problems"], error.problems);
  assert.deepEqual(
    { ...error.problems[0]! },
    {
      setting: "port",
      env: "PORT",
      source: "env",
      value: '"abc"',
      expected: "an integer 1..65535",
      message: 'PORT="abc": expected an integer 1..65535',
    },
  );
});

test("range, pattern, length and protocol limits are enforced", () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: "0" }, /PORT="0": expected an integer 1\.\.65535/],
    [{ PORT: "65536" }, /PORT="65536"/],
    [{ PORT: "80.5" }, /PORT="80\.5"/],
    [{ PORT: "9007199254740993" }, /PORT=/],
    [{ DATABASE_URL: "mysql://db" }, /DATABASE_URL="mysql:\/\/db": expected a postgres: or postgresql: URL/],
    [{ DATABASE_URL: "not a url" }, /DATABASE_URL="not a url"/],
    [{ SHUTDOWN_TIMEOUT: "500ms" }, /SHUTDOWN_TIMEOUT="500ms": expected a duration 1s\.\.1h/],
    [{ SHUTDOWN_TIMEOUT: "2h" }, /SHUTDOWN_TIMEOUT="2h"/],
    [{ SHUTDOWN_TIMEOUT: "-5s" }, /SHUTDOWN_TIMEOUT="-5s"/],
    [{ WORKER_NAME: "Relay_1" }, /WORKER_NAME="Relay_1": expected a string matching \/\^\[a-z-\]\+\$\//],
    [{ SAMPLE_RATIO: "NaN" }, /SAMPLE_RATIO="NaN"/],
    [{ SAMPLE_RATIO: "0x10" }, /SAMPLE_RATIO="0x10"/],
  ];
  for (const [env, pattern] of cases) {
    const error = configError(() => loadConfig(schema, { env: { ...minimalEnv, ...env } }));
    assert.equal(error.problems.length, 1, JSON.stringify(env));
    assert.match(error.message, pattern);
  }
});

test("secrets are never quoted in messages or problem fields", () => {
  const error = configError(() =>
    loadConfig(schema, { env: { ...minimalEnv, ADMIN_API_KEY: "short-secret" } }),
  );
  assert.equal(
    error.problems[0]!.message,
    "ADMIN_API_KEY=<redacted>: expected a string >= 32 characters long",
  );
  assert.equal(error.problems[0]!.value, "<redacted>");
  assert.ok(!JSON.stringify(error.fields).includes("short-secret"));
  assert.ok(!error.message.includes("short-secret"));
});

test("file problems name the key, the env var that overrides it, and unknown keys", () => {
  const error = configError(() =>
    loadConfig(schema, {
      env: minimalEnv,
      file: { port: 70000, metrics: "maybe", worker: { maxBatch: 0, nmae: "typo" }, logLevle: "debug" },
    }),
  );
  assert.deepEqual(
    error.problems.map((p) => p.message),
    [
      "port=70000 in the config file (env PORT): expected an integer 1..65535",
      'metrics="maybe" in the config file (env METRICS_ENABLED): expected a boolean (true/false, 1/0, yes/no, on/off)',
      "worker.maxBatch=0 in the config file (env WORKER_MAX_BATCH): expected an integer 1..10000",
      "worker.nmae in the config file is not a known setting",
      "logLevle in the config file is not a known setting",
    ],
  );
  const notAGroup = configError(() => loadConfig(schema, { env: minimalEnv, file: { worker: 5 } }));
  assert.match(notAGroup.message, /worker in the config file must be a group of settings/);
  const notAMapping = configError(() => loadConfig(schema, { env: minimalEnv, file: ["port"] }));
  assert.match(notAMapping.message, /the config file must hold a mapping of settings/);
});

test("an empty env var counts as unset; an invalid env value does not fall back to the file", () => {
  const config = loadConfig(schema, { env: { ...minimalEnv, PORT: "" }, file: { port: 8300 } });
  assert.equal(config.port, 8300);
  const error = configError(() =>
    loadConfig(schema, { env: { ...minimalEnv, PORT: "x" }, file: { port: 8300 } }),
  );
  assert.equal(error.problems.length, 1);
});

test("long bad values are quoted only up to a bound", () => {
  const error = configError(() => loadConfig(schema, { env: { ...minimalEnv, LOG_LEVEL: "x".repeat(500) } }));
  assert.ok(error.message.length < 300, `message length ${error.message.length}`);
  assert.match(error.message, /…/);
});

test("schema mistakes are caught when the schema is built or loaded", () => {
  const base = { env: "X_Y", description: "d" };
  assert.throws(() => field.int({ ...base, env: "port" }), /UPPER_SNAKE/);
  assert.throws(() => field.int({ ...base, description: " " }), /description/);
  assert.throws(() => field.int({ ...base, default: 1, required: true }), /cannot also be required/);
  assert.throws(() => field.int({ ...base, default: 0, min: 1 }), /default 0 is not an integer >= 1/);
  assert.throws(() => field.int({ ...base, min: 5, max: 1 }), /min 5 > max 1/);
  assert.throws(() => field.number({ ...base, max: Number.NaN }), /max must be finite/);
  assert.throws(() => field.enum(["a", "b"], { ...base, default: "c" as "a" }), /default c/);
  assert.throws(
    () => loadConfig({ a: field.int({ ...base }), g: { b: field.bool({ ...base }) } }, { env: {} }),
    /env X_Y is used by both a and g\.b/,
  );
});

test("durations parse and format symmetrically", () => {
  assert.equal(parseDurationMs("250"), 250);
  assert.equal(parseDurationMs("250ms"), 250);
  assert.equal(parseDurationMs("1.5s"), 1_500);
  assert.equal(parseDurationMs("1h30m"), 5_400_000);
  assert.equal(parseDurationMs("2d"), 172_800_000);
  for (const bad of ["", "s", "5 s", "5x", "-1s", "1h-30m"])
    assert.equal(parseDurationMs(bad), undefined, bad);
  for (const ms of [0, 1, 999, 1_000, 90_000, 5_400_000, 86_400_000 + 1]) {
    assert.equal(parseDurationMs(formatDurationMs(ms)), ms, String(ms));
  }
  assert.equal(formatDurationMs(5_400_000), "1h30m");
});

test("describeConfig lists every setting with its default and description, aligned", () => {
  const lines = describeConfig(schema);
  assert.equal(lines.length, 10);
  assert.equal(lines[0], "PORT              default 8100    HTTP port to listen on (an integer 1..65535)");
  assert.match(
    lines[1]!,
    /^DATABASE_URL {6}required {8}PostgreSQL connection URL \(a postgres: or postgresql: URL\)$/,
  );
  assert.match(lines[2]!, /^REDIS_URL +optional +Redis URL/);
  assert.match(lines[6]!, /^SHUTDOWN_TIMEOUT +default 10s +How long to drain/);
  assert.match(lines[8]!, /^WORKER_MAX_BATCH +default 100 /);
  const secret = field.string({ env: "TOKEN", default: "hunter2", secret: true, description: "Token" });
  assert.deepEqual(describeConfig({ secret }), ["TOKEN  default <redacted>  Token (a string)"]);
});
