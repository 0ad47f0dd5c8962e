/**
 * The service base every Casebook HTTP service is built on: Fastify 5 with JSON
 * logs carrying a request id, /healthz, /readyz, /metrics and /openapi.json,
 * RFC 9457 problem+json for every error, explicit server timeouts, and a graceful
 * close that drains in-flight requests before closing pools.
 *
 * @example
 * const service = createService({
 *   name: "url-shortener",
 *   version: "0.1.0",
 *   checks: { database: async () => void (await pool.query("select 1")) },
 *   onClose: [() => pool.end()],
 *   errors: [shortenerErrors],
 * });
 * service.app.post("/v1/links", { schema: { summary: "Shorten a URL", body } }, handler);
 * const { url } = await service.listen({ port: 8109 });
 * installSignalHandlers(service);
 */
import type { AddressInfo } from "node:net";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { commonErrors, type ErrorRegistry } from "@casebook/kit/errors";
import { type FastifyInstance, fastify, LogController } from "fastify";
import type { Registry } from "prom-client";
import { installAccessLog } from "./access-log.ts";
import { registerApiReference } from "./api-reference.ts";
import { buildPartAwareValidator, serviceAjvOptions } from "./body-validation.ts";
import {
  clientErrorHandler,
  type ErrorFormat,
  frameworkErrorHandlerWith,
  installErrorHandling,
} from "./error-handling.ts";
import { installHandlerDeadline } from "./handler-deadline.ts";
import { httpErrors } from "./http-errors.ts";
import { registerLandingRoute } from "./landing-routes.ts";
import { createLogger, type Logger, type LogOptions } from "./logger.ts";
import { createHttpDurationHistogram, createMetricsRegistry, UNMATCHED_ROUTE } from "./metrics.ts";
import {
  buildOpenApiDocument,
  type OpenApiInput,
  type RouteDoc,
  routeDocs,
  routeErrorCodes,
} from "./openapi.ts";
import { registerOpsRoutes } from "./ops-routes.ts";
import { type ReadinessCheck, type ReadinessReport, runReadinessChecks } from "./readiness.ts";
import { REQUEST_ID_HEADER, requestIdGenerator } from "./request-id.ts";
import { type CloseHook, drainServer, runCloseHooks } from "./shutdown.ts";
import { installStrictEdge } from "./strict-edge.ts";

/**
 * Server timeouts, set explicitly because Fastify's defaults (0 = none for most)
 * leave a bare service open to slow clients.
 */
export interface ServerTimeouts {
  /** Idle keep-alive connections close after this. 72 s: longer than load balancers' 60 s idle timeout, so the
   *  balancer closes first and never reuses a connection we are closing (the classic sporadic 502). */
  keepAliveTimeoutMs: number;
  /** All request headers must arrive within this: slowloris sends them a byte at a time. */
  headersTimeoutMs: number;
  /** The whole request (headers and body) must arrive within this; upload endpoints need their own service. */
  requestTimeoutMs: number;
  /** A socket with no traffic at all for this long is destroyed: the backstop for stuck peers. Longer than
   *  keepAliveTimeoutMs so it never cuts an idle keep-alive connection before the keep-alive rule does. */
  connectionTimeoutMs: number;
  /** A route must answer within this (503 HANDLER_TIMEOUT; `handler-deadline.ts`). Streaming or slow
   *  routes set their own `config: { handlerTimeoutMs }`. Beware: Fastify 5 aborts `request.signal`
   *  on the request's 'close', which Node emits once a body has been READ — so it does not mean "the
   *  client left". For that, watch `reply.raw` 'close' with `!reply.raw.writableFinished`. */
  handlerTimeoutMs: number;
  /** How often Node enforces the headers and request timeouts. Node's default is 30 s, which would let a
   *  10 s headers timeout fire anywhere between 10 and 40 s; one sweep a second keeps the bounds honest. */
  timeoutCheckIntervalMs: number;
}

export const defaultServerTimeouts: Readonly<ServerTimeouts> = Object.freeze({
  keepAliveTimeoutMs: 72_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  connectionTimeoutMs: 120_000,
  handlerTimeoutMs: 30_000,
  timeoutCheckIntervalMs: 1_000,
});

/** 1 MiB: JSON APIs rarely need more; a larger default only helps someone exhaust memory. */
export const defaultBodyLimitBytes = 1_048_576;
/** A Kubernetes pod gets 30 s between SIGTERM and SIGKILL: 10 s drain leaves time for the close hooks. */
export const defaultDrainTimeoutMs = 10_000;
export const defaultCloseHookTimeoutMs = 5_000;
/** Kubernetes' default probe timeout is 1 s; checks run concurrently, so 900 ms each fits inside it. */
export const defaultCheckTimeoutMs = 900;

export interface ServiceOptions {
  /** The system's name (`url-shortener`): in every log line and the OpenAPI title. */
  name: string;
  version: string;
  /** Logger options, or a ready pino logger shared with the rest of the process. */
  log?: LogOptions | Logger;
  bodyLimitBytes?: number;
  /** Readiness checks by name; each bounded by `checkTimeoutMs`. */
  checks?: Readonly<Record<string, ReadinessCheck>>;
  checkTimeoutMs?: number;
  /** Run after the drain, last first: close pools and clients here. */
  onClose?: readonly CloseHook[];
  closeHookTimeoutMs?: number;
  drainTimeoutMs?: number;
  /** The service's error registries; commonErrors and httpErrors are always included. */
  errors?: readonly ErrorRegistry<string>[];
  timeouts?: Partial<ServerTimeouts>;
  /** Trust X-Forwarded-* only from these proxies; default false (a direct client could spoof them). */
  trustProxy?: boolean | string | string[];
  /** Include the Node process metrics in /metrics; default true. */
  defaultMetrics?: boolean;
  /** Generates request ids when the caller sent none (or an unsafe one); default random UUID. */
  newRequestId?: () => string;
  clock?: Clock;
  /** OpenAPI `info.description`. */
  description?: string;
  /** Where `GET /` sends a browser (relative, e.g. `app/`); default the API reference page. */
  browserHome?: string;
  /** /openapi.json's `servers` (default `/`) and `securitySchemes` (describe `bearerAuth` here). */
  openapi?: Pick<OpenApiInput, "servers" | "securitySchemes">;
  /** Other error shapes for some paths (an OpenAI-compatible API's `{error:{…}}`); see error-handling.ts. */
  errorFormats?: readonly ErrorFormat[];
  /** The access log's bounds (lines a second); see access-log.ts. */
  accessLog?: { clientErrorLinesPerS?: number; sampledLinesPerS?: number };
}

/** A route as registered: `hidden` when its schema says `hide: true` (left out of /openapi.json). */
export interface RegisteredRoute {
  method: string;
  url: string;
  hidden: boolean;
}

export interface ListenOptions {
  port: number;
  /** Default 127.0.0.1: listening on every interface is a decision, so it must be asked for (`0.0.0.0`). */
  host?: string;
}

export interface Service {
  readonly name: string;
  readonly version: string;
  readonly app: FastifyInstance;
  readonly log: Logger;
  /** This service's metrics registry: register the system's own metrics here. */
  readonly registry: Registry;
  /** Every route registered, in order (HEAD included): what a test checks /openapi.json against. */
  readonly routes: readonly RegisteredRoute[];
  /** True from the moment close() is called: new requests get 503 SERVICE_CLOSING. */
  readonly closing: boolean;
  addCheck(name: string, check: ReadinessCheck): void;
  /** Adds a close hook; hooks run last-added first. */
  onClose(hook: CloseHook): void;
  listen(options: ListenOptions): Promise<{ url: string }>;
  /** Drains in-flight requests (bounded), then runs the close hooks. Idempotent; rejects if anything failed. */
  close(): Promise<void>;
}

function isLogger(log: LogOptions | Logger | undefined): log is Logger {
  return typeof (log as Logger | undefined)?.child === "function";
}

/** Each code's status, over all registries; a code with two different statuses is a bug caught at start. */
function errorStatuses(registries: readonly ErrorRegistry<string>[]): Map<string, number> {
  const statuses = new Map<string, number>();
  for (const registry of registries) {
    for (const [code, spec] of Object.entries(registry.specs)) {
      const seen = statuses.get(code);
      if (seen !== undefined && seen !== spec.status) {
        throw new TypeError(`error code ${code} is defined twice, with status ${seen} and ${spec.status}`);
      }
      statuses.set(code, spec.status);
    }
  }
  return statuses;
}

function buildApp(options: ServiceOptions, log: Logger, newRequestId: () => string): FastifyInstance {
  const timeouts = { ...defaultServerTimeouts, ...options.timeouts };
  const app = fastify({
    loggerInstance: log,
    requestIdHeader: false, // we read x-request-id ourselves, to validate it
    logController: new LogController({
      requestIdLogLabel: "requestId",
      // Fastify's two lines per request are replaced by access-log.ts's one.
      disableRequestLogging: true,
    }),
    genReqId: requestIdGenerator(newRequestId),
    bodyLimit: options.bodyLimitBytes ?? defaultBodyLimitBytes,
    trustProxy: options.trustProxy ?? false,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    connectionTimeout: timeouts.connectionTimeoutMs,
    http: {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      connectionsCheckingInterval: timeouts.timeoutCheckIntervalMs,
    },
    forceCloseConnections: "idle",
    // Fastify's own 503-on-closing writes a non-problem body without our request id; the onRequest guard
    // below answers SERVICE_CLOSING (503, Connection: close) as problem+json instead.
    return503OnClosing: false,
    pluginTimeout: 10_000,
    onProtoPoisoning: "error",
    onConstructorPoisoning: "error",
    ajv: { customOptions: { ...serviceAjvOptions } },
    schemaController: { compilersFactory: { buildValidator: buildPartAwareValidator } },
    frameworkErrors: frameworkErrorHandlerWith(options.errorFormats),
    clientErrorHandler: clientErrorHandler(log, newRequestId),
  });
  // Typed with pino's Logger, the instance is a different generic FastifyInstance; the object is the same.
  const built = app as unknown as FastifyInstance;
  // First of every hook: the deadline covers the other hooks too.
  installHandlerDeadline(built, timeouts.handlerTimeoutMs);
  return built;
}

function listenUrl(address: AddressInfo | string | null): string {
  if (address === null || typeof address === "string")
    throw new Error(`unexpected server address ${address}`);
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/**
 * Request ids on every response, the closing guard, and the duration histogram. Callback
 * hooks: they run on every request of every route, and an async hook costs a promise and a
 * microtask turn each time for work that never waits.
 */
function installRequestHooks(app: FastifyInstance, registry: Registry, isClosing: () => boolean): void {
  const duration = createHttpDurationHistogram(registry);
  app.addHook("onRequest", (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    if (!isClosing()) return done();
    reply.header("connection", "close");
    done(httpErrors.create("SERVICE_CLOSING"));
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    // A keep-alive connection would otherwise outlive the drain, idle, until keepAliveTimeout.
    if (isClosing()) reply.header("connection", "close");
    done(null, payload);
  });
  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const labels = { method: request.method, route, status_code: String(reply.statusCode) };
    duration.observe(labels, reply.elapsedTime / 1000);
    // A streamed response may have sent its headers before close(): reap its connection once it is idle.
    if (isClosing()) setImmediate(() => app.server.closeIdleConnections());
    done();
  });
}

/** Collects routes for /openapi.json as they are registered; the text is rebuilt only after a change. */
function openApiSource(
  app: FastifyInstance,
  options: ServiceOptions,
  statuses: ReadonlyMap<string, number>,
  registered: RegisteredRoute[],
): () => string {
  const routes: RouteDoc[] = [];
  let text: string | undefined;
  app.addHook("onRoute", (route) => {
    for (const method of typeof route.method === "string" ? [route.method] : route.method) {
      registered.push({ method: method.toUpperCase(), url: route.url, hidden: route.schema?.hide === true });
    }
    const docs = routeDocs(route);
    // A route naming a code no registry defines is a bug: fail its registration, not /openapi.json.
    for (const code of docs.flatMap(routeErrorCodes)) {
      if (!statuses.has(code))
        throw new TypeError(`${route.method} ${route.url}: error code ${code} is in no registry`);
    }
    routes.push(...docs);
    text = undefined;
  });
  return () => {
    text ??= JSON.stringify(
      buildOpenApiDocument({
        title: options.name,
        version: options.version,
        ...(options.description ? { description: options.description } : {}),
        routes,
        sharedSchemas: app.getSchemas(),
        errorCodes: [...statuses.keys()],
        errorStatuses: Object.fromEntries(statuses),
        ...(options.openapi ?? {}),
      }),
    );
    return text;
  };
}

/** One readiness run at a time: a burst of probes shares it instead of multiplying database pings. */
function readinessSource(checks: Record<string, ReadinessCheck>, timeoutMs: number, clock: Clock) {
  let inflight: Promise<ReadinessReport> | undefined;
  return (): Promise<ReadinessReport> => {
    inflight ??= runReadinessChecks(checks, { timeoutMs, clock }).finally(() => {
      inflight = undefined;
    });
    return inflight;
  };
}

/** Drains the server (bounded), then runs every close hook; rejects with all failures at the end. */
async function shutDown(
  app: FastifyInstance,
  hooks: readonly CloseHook[],
  options: ServiceOptions,
  log: Logger,
) {
  const drainTimeoutMs = options.drainTimeoutMs ?? defaultDrainTimeoutMs;
  log.info({ drainTimeoutMs }, "closing: draining in-flight requests");
  const failures: unknown[] = [];
  await drainServer(app, { drainTimeoutMs, log }).catch((error: unknown) => failures.push(error));
  const timeoutMs = options.closeHookTimeoutMs ?? defaultCloseHookTimeoutMs;
  failures.push(...(await runCloseHooks(hooks, { timeoutMs, log })));
  if (failures.length > 0) {
    throw new AggregateError(failures, `${options.name} closed with ${failures.length} failure(s)`);
  }
  log.info("closed");
}

/** Creates the service; routes are added on `service.app`, then `listen()`. */
export function createService(options: ServiceOptions): Service {
  const log = isLogger(options.log)
    ? options.log
    : createLogger({ ...options.log, service: options.name, version: options.version });
  const statuses = errorStatuses([commonErrors, httpErrors, ...(options.errors ?? [])]);
  const knownCodes = new Set(statuses.keys());
  const newRequestId = options.newRequestId ?? (() => crypto.randomUUID());
  const checks: Record<string, ReadinessCheck> = { ...options.checks };
  const hooks: CloseHook[] = [...(options.onClose ?? [])];
  const registry = createMetricsRegistry({ defaultMetrics: options.defaultMetrics ?? true });
  const app = buildApp(options, log, newRequestId);
  let closing = false;
  let closed: Promise<void> | undefined;

  installRequestHooks(app, registry, () => closing);
  installAccessLog(app, { registry, clock: options.clock ?? systemClock, ...options.accessLog });
  const { routeMethods } = installStrictEdge(app);
  installErrorHandling(app, {
    knownCodes,
    routeMethods,
    ...(options.errorFormats ? { errorFormats: options.errorFormats } : {}),
  });
  const registered: RegisteredRoute[] = [];
  const openapi = openApiSource(app, options, statuses, registered);
  const readiness = readinessSource(
    checks,
    options.checkTimeoutMs ?? defaultCheckTimeoutMs,
    options.clock ?? systemClock,
  );
  registerOpsRoutes(app, { registry, readiness, openapi });
  registerLandingRoute(app, options);
  registerApiReference(app, { title: options.name });

  return {
    name: options.name,
    version: options.version,
    app,
    log,
    registry,
    routes: registered,
    get closing() {
      return closing;
    },
    addCheck: (name, check) => {
      checks[name] = check;
    },
    onClose: (hook) => {
      hooks.push(hook);
    },
    async listen({ port, host = "127.0.0.1" }) {
      await app.listen({ port, host });
      return { url: listenUrl(app.server.address()) };
    },
    close: () => {
      closing = true;
      closed ??= shutDown(app, hooks, options, log);
      return closed;
    },
  };
}
