/**
 * An OpenAPI 3.1 document built from the routes' own JSON schemas, collected by
 * Fastify's onRoute hook: the schemas that validate requests and serialize
 * responses are the ones documented, so the document cannot drift from the code.
 * No dependency: @fastify/swagger would add a plugin and its YAML/UI baggage for
 * what is a walk over route schemas.
 *
 * Routes may carry `summary`, `description`, `tags`, `operationId`, `deprecated`
 * and `hide` in their `schema` (the same keys @fastify/swagger reads). Shared
 * schemas added with `app.addSchema({ $id })` become `components.schemas`, and
 * `$ref: "Thing#"` becomes `$ref: "#/components/schemas/Thing"`. Every operation
 * gets a `default` response: the problem+json body of every error.
 *
 * For client generators, each operation also lists the 4xx problems it can answer, by
 * status, naming their codes: 400 when it validates a request part, 400/413/415 when it
 * reads a body, 401 when its `security` asks for credentials (`security: bearerSecurity`
 * from bearer-auth.ts; the scheme is in `components.securitySchemes`, not an
 * `authorization` header parameter), and each code of its own `errorCodes` (checked
 * against the service's registries). An operation without an `operationId` gets one from
 * its method and path (`getV1LinksByCode`), and `servers` defaults to `/`: relative to
 * wherever the document was fetched, which stays right behind a proxy.
 *
 * Limits: HEAD routes are left out (Fastify adds one per GET); `$ref`s local to a
 * route schema (`#/definitions/x`) are kept as written; schemas are Fastify's
 * draft-07, which OpenAPI 3.1's 2020-12 dialect reads the same except for tuple
 * `items` arrays and `definitions` (prefer `prefixItems`-free schemas and `$defs`).
 *
 * @example
 * app.post("/v1/links", { schema: { summary: "Shorten a URL", tags: ["links"], body: linkBody } }, handler);
 * // GET /openapi.json → paths["/v1/links"].post.summary === "Shorten a URL"
 */
import { STATUS_CODES } from "node:http";
import { commonErrors } from "@casebook/kit/errors";
import type { FastifySchema } from "fastify";
import { httpErrors } from "./http-errors.ts";

declare module "fastify" {
  interface FastifySchema {
    /** One line shown in the operation list of /openapi.json. */
    summary?: string;
    description?: string;
    tags?: readonly string[];
    operationId?: string;
    deprecated?: boolean;
    /** Leave this route out of /openapi.json. */
    hide?: boolean;
    /** OpenAPI security requirements: `bearerSecurity` (bearer-auth.ts) for `Authorization: Bearer`. */
    security?: readonly Readonly<Record<string, readonly string[]>>[];
    /** Error codes this route answers with beyond the ones derived (validation, body, auth): its 404, 409… */
    errorCodes?: readonly string[];
    /** The request body, documented but not validated by ajv: for a handler that validates it itself. */
    documentedBody?: unknown;
  }
}

export interface RouteDoc {
  method: string;
  url: string;
  schema: FastifySchema | undefined;
}

export interface OpenApiInput {
  title: string;
  version: string;
  description?: string;
  routes: readonly RouteDoc[];
  /** `app.getSchemas()`: shared schemas by `$id`. */
  sharedSchemas?: Readonly<Record<string, unknown>>;
  /** Every error code the service can answer with, for the Problem schema's `code` enum. */
  errorCodes?: readonly string[];
  /** The HTTP status of each code (the service's registries), for the per-route 4xx responses. */
  errorStatuses?: Readonly<Record<string, number>>;
  /** Default `[{ url: "/" }]`. */
  servers?: readonly { url: string; description?: string }[];
  /** Security schemes by name; `bearerAuth` defaults to plain HTTP bearer when a route uses it. */
  securitySchemes?: Readonly<Record<string, Json>>;
}

type Json = Record<string, unknown>;

const PROBLEM_RESPONSE_REF = "#/components/responses/Problem";
const PROBLEM_SCHEMA_REF = "#/components/schemas/Problem";

/** The scheme `bearerSecurity` names, defined unless the service gives its own description. */
const DEFAULT_SECURITY_SCHEMES: Readonly<Record<string, Json>> = {
  bearerAuth: { type: "http", scheme: "bearer", description: "`Authorization: Bearer <API key>`" },
};

/** Codes every route that validates a part may answer (the schema), and every route that reads a body. */
const VALIDATION_CODES = ["REQUEST_INVALID"];
const BODY_CODES = ["REQUEST_MALFORMED", "REQUEST_TOO_LARGE", "REQUEST_MEDIA_TYPE_UNSUPPORTED"];
const AUTH_CODES = ["AUTH_MISSING", "AUTH_INVALID"];
const BODY_METHODS = new Set(["post", "put", "patch"]);
/** The codes every service can answer with (createService always includes these registries). */
const BASE_ERROR_STATUSES: Readonly<Record<string, number>> = Object.fromEntries(
  [commonErrors, httpErrors].flatMap((registry) =>
    Object.entries(registry.specs).map(([code, spec]) => [code, spec.status]),
  ),
);

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** One RouteDoc per documented method of a route registration (Fastify's onRoute options). */
export function routeDocs(route: {
  method: string | readonly string[];
  url: string;
  schema?: FastifySchema;
}): RouteDoc[] {
  if (route.schema?.hide === true) return [];
  const methods = typeof route.method === "string" ? [route.method] : route.method;
  return methods
    .filter((method) => method.toUpperCase() !== "HEAD")
    .map((method) => ({ method: method.toLowerCase(), url: route.url, schema: route.schema }));
}

/** `/v1/links/:id(^\\d+$)` → `{ path: "/v1/links/{id}", names: ["id"] }`; `*` → `{wildcard}`. */
export function openApiPath(url: string): { path: string; names: string[] } {
  const names: string[] = [];
  const escapedColon = "\u0000";
  const path = url
    .replaceAll("::", escapedColon)
    .replace(/:([A-Za-z0-9_$]+)(\((?:\\.|[^)])*\))?/g, (_match, name: string) => {
      names.push(name);
      return `{${name}}`;
    })
    .replace(/\*$/, () => {
      names.push("wildcard");
      return "{wildcard}";
    })
    .replaceAll(escapedColon, ":");
  return { path, names };
}

function componentKey(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, "_");
}

/**
 * Deep copy with `$ref`s to shared schemas pointed into components. `selfKey` is
 * the component the copy becomes, so its local `#/...` refs keep resolving there.
 */
function rewriteRefs(value: unknown, sharedIds: ReadonlySet<string>, selfKey?: string): unknown {
  if (Array.isArray(value)) return value.map((item) => rewriteRefs(item, sharedIds, selfKey));
  if (!isObject(value)) return value;
  const copy: Json = {};
  for (const [key, item] of Object.entries(value)) {
    copy[key] =
      key === "$ref" && typeof item === "string"
        ? rewriteRef(item, sharedIds, selfKey)
        : rewriteRefs(item, sharedIds, selfKey);
  }
  return copy;
}

function rewriteRef(ref: string, sharedIds: ReadonlySet<string>, selfKey?: string): string {
  const hash = ref.indexOf("#");
  const base = hash === -1 ? ref : ref.slice(0, hash);
  const fragment = hash === -1 ? "" : ref.slice(hash + 1);
  if (base === "") return selfKey === undefined ? ref : `#/components/schemas/${selfKey}${fragment}`;
  return sharedIds.has(base) ? `#/components/schemas/${componentKey(base)}${fragment}` : ref;
}

/** Fastify accepts `{ a: {...} }` as shorthand for `{ type: "object", properties: { a: {...} } }`. */
function objectShape(schema: unknown): { properties: Json; required: string[] } {
  if (!isObject(schema)) return { properties: {}, required: [] };
  if (schema.type === undefined && schema.properties === undefined)
    return { properties: schema, required: [] };
  const required = Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : [];
  return { properties: isObject(schema.properties) ? schema.properties : {}, required };
}

function parameters(
  schema: FastifySchema,
  pathNames: readonly string[],
  sharedIds: ReadonlySet<string>,
): Json[] {
  const out: Json[] = [];
  const pathShape = objectShape(schema.params);
  for (const name of pathNames) {
    const property = pathShape.properties[name] ?? { type: "string" };
    out.push(parameter(name, "path", true, property, sharedIds));
  }
  for (const [part, location] of [
    ["querystring", "query"],
    ["headers", "header"],
  ] as const) {
    const shape = objectShape(schema[part]);
    for (const [name, property] of Object.entries(shape.properties)) {
      out.push(parameter(name, location, shape.required.includes(name), property, sharedIds));
    }
  }
  return out;
}

function parameter(
  name: string,
  location: string,
  required: boolean,
  property: unknown,
  ids: ReadonlySet<string>,
) {
  const description =
    isObject(property) && typeof property.description === "string" ? property.description : undefined;
  return {
    name,
    in: location,
    required,
    ...(description ? { description } : {}),
    schema: rewriteRefs(property, ids),
  };
}

/** A Fastify `{ content: { "type": { schema } } }` map, or a bare schema meaning application/json. */
function content(schema: Json, ids: ReadonlySet<string>): Json {
  if (!isObject(schema.content)) return { "application/json": { schema: rewriteRefs(schema, ids) } };
  const out: Json = {};
  for (const [type, entry] of Object.entries(schema.content)) {
    out[type] = { schema: rewriteRefs(isObject(entry) ? entry.schema : undefined, ids) };
  }
  return out;
}

function responses(response: unknown, ids: ReadonlySet<string>): Json {
  const out: Json = {};
  for (const [status, schema] of Object.entries(isObject(response) ? response : {})) {
    if (!isObject(schema)) continue;
    const key = /^[1-5]xx$/i.test(status) ? status.toUpperCase() : status;
    const description =
      typeof schema.description === "string" ? schema.description : (STATUS_CODES[status] ?? "Response");
    // `type: "null"` is how Fastify routes declare an empty body (204).
    out[key] = schema.type === "null" ? { description } : { description, content: content(schema, ids) };
  }
  out.default = { $ref: PROBLEM_RESPONSE_REF };
  return out;
}

/** The codes a route can answer with, derived from its shape, then its own `errorCodes`. */
export function routeErrorCodes(route: RouteDoc): string[] {
  const schema = route.schema ?? {};
  const codes: string[] = [];
  if (schema.body || schema.querystring || schema.params || schema.headers) codes.push(...VALIDATION_CODES);
  if (BODY_METHODS.has(route.method)) codes.push(...BODY_CODES);
  if (schema.security?.some((requirement) => Object.keys(requirement).length > 0)) codes.push(...AUTH_CODES);
  codes.push(...(schema.errorCodes ?? []));
  return [...new Set(codes)];
}

/** One problem+json response per 4xx status the route can give, naming its codes. */
function problemResponses(route: RouteDoc, statuses: Readonly<Record<string, number>>): Json {
  const byStatus = new Map<number, string[]>();
  for (const code of routeErrorCodes(route)) {
    const status = statuses[code];
    if (status === undefined)
      throw new TypeError(`${route.method} ${route.url}: error code ${code} is in no registry`);
    if (status >= 500) continue; // 5xx are the `default` response: any route may give them
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Json = {};
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] = {
      description: `${STATUS_CODES[status] ?? "Error"}: ${codes.join(", ")}`,
      content: { "application/problem+json": { schema: { $ref: PROBLEM_SCHEMA_REF } } },
    };
  }
  return out;
}

function requestBody(schema: FastifySchema, ids: ReadonlySet<string>): Json {
  const body = isObject(schema.body) ? schema.body : schema.documentedBody;
  if (!isObject(body)) return {};
  // A body whose every property is optional may be left out entirely (a capture of the whole amount).
  const required = !isObject(schema.body) ? Array.isArray(body.required) && body.required.length > 0 : true;
  return { requestBody: { required, content: content(body, ids) } };
}

/** A status both declared and derived (a 422 with a body, or a problem) documents both media types. */
function mergeResponses(problems: Json, declared: Json): Json {
  const out: Json = { ...problems };
  for (const [status, response] of Object.entries(declared)) {
    const problem = problems[status];
    out[status] =
      isObject(problem) && isObject(response) && isObject(response.content)
        ? {
            description: `${response.description}; or a problem: ${String(problem.description)}`,
            content: { ...response.content, ...(problem.content as Json) },
          }
        : response;
  }
  // Numbered statuses first, in order, then `default`: the order readers and generators expect.
  return Object.fromEntries(
    Object.entries(out).sort(([a], [b]) => (a === "default" ? 1 : b === "default" ? -1 : a.localeCompare(b))),
  );
}

/** `get /v1/links/:code` → `getV1LinksByCode`: stable, unique per method and path. */
export function defaultOperationId(method: string, url: string): string {
  const words = url
    .split("/")
    .filter((segment) => segment !== "")
    .flatMap((segment) =>
      segment.startsWith(":")
        ? ["by", ...segment.slice(1).split(/[^A-Za-z0-9]+/)]
        : segment.split(/[^A-Za-z0-9]+/),
    )
    .filter((word) => word !== "");
  return method + words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join("");
}

function operation(
  route: RouteDoc,
  pathNames: readonly string[],
  ids: ReadonlySet<string>,
  statuses: Readonly<Record<string, number>>,
): Json {
  const schema = route.schema ?? {};
  const params = parameters(schema, pathNames, ids);
  const declared = responses(schema.response, ids);
  const problems = problemResponses(route, statuses);
  return {
    operationId: schema.operationId ?? defaultOperationId(route.method, route.url),
    ...(schema.summary ? { summary: schema.summary } : {}),
    ...(schema.description ? { description: schema.description } : {}),
    ...(schema.tags?.length ? { tags: [...schema.tags] } : {}),
    ...(schema.deprecated ? { deprecated: true } : {}),
    ...(params.length > 0 ? { parameters: params } : {}),
    ...requestBody(schema, ids),
    ...(schema.security ? { security: schema.security.map((requirement) => ({ ...requirement })) } : {}),
    responses: mergeResponses(problems, declared),
  };
}

/** The RFC 9457 body every error response carries. */
function problemSchema(errorCodes: readonly string[]): Json {
  const text = { type: "string" };
  return {
    type: "object",
    required: ["type", "title", "status", "detail", "instance", "code", "requestId"],
    properties: {
      type: { type: "string", format: "uri-reference" },
      title: text,
      status: { type: "integer", minimum: 400, maximum: 599 },
      detail: text,
      instance: text,
      code: errorCodes.length > 0 ? { type: "string", enum: [...new Set(errorCodes)].sort() } : text,
      requestId: text,
      errors: {
        type: "array",
        items: { type: "object", required: ["field", "message"], properties: { field: text, message: text } },
      },
    },
    additionalProperties: true,
  };
}

function securitySchemes(names: ReadonlySet<string>, given: Readonly<Record<string, Json>> = {}): Json {
  const out: Json = {};
  for (const name of names) {
    const scheme = given[name] ?? DEFAULT_SECURITY_SCHEMES[name];
    if (scheme === undefined)
      throw new TypeError(`security scheme ${name} is used by a route but not defined`);
    out[name] = scheme;
  }
  return out;
}

/** Builds the document; paths and tags keep registration order, so output is stable. */
export function buildOpenApiDocument(input: OpenApiInput): Json {
  const shared = input.sharedSchemas ?? {};
  const ids = new Set(Object.keys(shared));
  const schemas: Json = {};
  for (const [id, schema] of Object.entries(shared)) {
    const copy = rewriteRefs(schema, ids, componentKey(id)) as Json;
    delete copy.$id; // a $id would re-base the rewritten `#/components/...` refs inside it
    schemas[componentKey(id)] = copy;
  }
  schemas.Problem = problemSchema(input.errorCodes ?? []);
  const paths: Record<string, Json> = {};
  const tags = new Set<string>();
  const schemeNames = new Set<string>();
  const statuses = { ...BASE_ERROR_STATUSES, ...input.errorStatuses };
  for (const route of input.routes) {
    const { path, names } = openApiPath(route.url);
    paths[path] ??= {};
    paths[path][route.method] = operation(route, names, ids, statuses);
    for (const tag of route.schema?.tags ?? []) tags.add(tag);
    for (const requirement of route.schema?.security ?? [])
      for (const name in requirement) schemeNames.add(name);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: input.title,
      version: input.version,
      ...(input.description ? { description: input.description } : {}),
    },
    servers: (input.servers ?? [{ url: "/" }]).map((server) => ({ ...server })),
    ...(tags.size > 0 ? { tags: [...tags].map((name) => ({ name })) } : {}),
    paths,
    components: {
      schemas,
      ...(schemeNames.size > 0
        ? { securitySchemes: securitySchemes(schemeNames, input.securitySchemes) }
        : {}),
      responses: {
        Problem: {
          description: "An error, as RFC 9457 problem details.",
          content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
        },
      },
    },
  };
}
