/**
 * The error registry of @casebook/lab (one registry per package): what the engine
 * spawners, the fault proxy, the load generator and the bench report raise. Lab
 * runs in tests and benches, so the statuses only keep the registry's shape; the
 * messages say what to do.
 *
 * @example
 * try { await spawnRedis(); } catch (error) {
 *   if (labErrors.is(error, "LAB_ENGINE_MISSING")) console.error(error.message);
 * }
 */
import { defineErrors } from "@casebook/kit/errors";

export const labErrors = defineErrors({
  LAB_ENGINE_MISSING: {
    status: 500,
    message: "The engine's programs are not installed here; install the Debian package the message names.",
  },
  LAB_ENGINE_START_FAILED: {
    status: 500,
    message: "The engine exited while starting; `fields.log` holds the end of its output.",
  },
  LAB_ENGINE_NOT_READY: {
    status: 504,
    message: "The engine did not answer within `readyTimeoutMs`; raise it or read `fields.log`.",
  },
  LAB_ENGINE_PORT_TAKEN: {
    status: 500,
    message: "Another process holds the port; retry, or restart() after it is released.",
  },
  LAB_ENGINE_NOT_RUNNING: {
    status: 409,
    message: "The engine is not running; restart() it first (stop() is final: spawn a new one).",
  },
  LAB_CLUSTER_INVALID: {
    status: 400,
    message: "The cluster shape is invalid; `fields` names the primaries and replicas asked for.",
  },
  LAB_PROXY_PORT_TAKEN: {
    status: 500,
    message:
      "Another process took the proxy's port while it refused connections; close the proxy and start a new one.",
  },
  LAB_PROXY_CLOSED: {
    status: 409,
    message: "The fault proxy is closed; start a new one.",
  },
  LAB_LOAD_INVALID: {
    status: 400,
    message: "The load options are invalid; `fields` names the option at fault.",
  },
  LAB_WAIT_TIMEOUT: {
    status: 504,
    message:
      "What the test awaited did not happen in time; the message names it and the cause is the last error.",
  },
  LAB_CHILD_FAILED: {
    status: 500,
    message:
      "The child process exited or stayed silent before its ready line; the message ends with its stderr.",
  },
  LAB_BROWSER_MISSING: {
    status: 500,
    message: "No Chromium to drive; install Debian's chromium (apt-get install -y chromium).",
  },
  LAB_MUTATION_INVALID: {
    status: 400,
    message:
      "The mutation list or one of its entries is invalid (or its `find` text does not occur exactly once); `fields.field` names the entry and field.",
  },
  LAB_BENCH_INVALID: {
    status: 400,
    message: "The bench row is invalid; `fields` names the value at fault.",
  },
});

export type LabErrorCode = keyof typeof labErrors.specs;
