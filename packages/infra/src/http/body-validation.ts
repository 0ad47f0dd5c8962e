/**
 * Schema validation with one rule per request part: the text parts (querystring,
 * params, headers) arrive as strings, so ajv may parse them by their schema
 * (`?limit=10` → 10); a body is JSON, which already carries its types, so it is
 * validated without coercion. With coercion on, `"cost":"3"`, `"cost":true`,
 * `"ip":5` or `"ip":["a"]` all passed for an integer or a string, and a scalar
 * passed where an array is declared: a client with a type bug never learned of
 * it, and the value stored was not the value sent.
 *
 * Two ajv instances (each from Fastify's own compiler pool, so shared
 * `addSchema` schemas resolve in both), chosen by the part being compiled.
 *
 * @example
 * fastify({
 *   ajv: { customOptions: { coerceTypes: "array", allErrors: false } }, // the text parts' options
 *   schemaController: { compilersFactory: { buildValidator: buildPartAwareValidator } },
 * });
 * // POST {"cost":"3"} to a body { cost: { type: "integer" } } → 400, errors[0] = { field: "/body/cost", message: "must be integer" }
 */
import AjvCompiler from "@fastify/ajv-compiler";

type BuildCompilerFromPool = AjvCompiler.BuildCompilerFromPool;
type ExternalSchemas = Parameters<BuildCompilerFromPool>[0];
type CompilerOptions = NonNullable<Parameters<BuildCompilerFromPool>[1]>;

/**
 * A header schema with its header names in lower case, as Node gives request headers. Fastify does
 * this itself only for its own validator: with any `buildValidator` it hands the schema over as
 * written, so `required: ["Idempotency-Key"]` would never match. `properties` and `required` are
 * where header names stand in practice; write any other header-name construct in lower case.
 */
export function lowerCaseHeaderNames(schema: unknown): unknown {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return schema;
  const { properties, required, ...rest } = schema as { properties?: unknown; required?: unknown };
  const lowered: Record<string, unknown> = { ...rest };
  if (typeof properties === "object" && properties !== null) {
    lowered.properties = Object.fromEntries(
      Object.entries(properties).map(([name, value]) => [name.toLowerCase(), value]),
    );
  }
  if (Array.isArray(required)) {
    lowered.required = required.map((name) => (typeof name === "string" ? name.toLowerCase() : name));
  }
  return lowered;
}

/** The ajv options every service's Fastify is built with (service.ts): the text parts' options. */
export const serviceAjvOptions = {
  // One error per request part: ajv's own advice for untrusted input (allErrors costs CPU on big bodies).
  allErrors: false,
  // Reject unknown properties (400 naming them) where a schema says additionalProperties: false,
  // instead of silently dropping them: a typo in a field name should not pass unnoticed.
  removeAdditional: false,
  // The text parts only (querystring, params, headers): bodies are JSON and are validated without
  // coercion, so `"cost":"3"` is a 400, not a 3.
  coerceTypes: "array",
  useDefaults: true,
  // `type: ["string", "null"]` is plain JSON Schema (OpenAI's nullable fields): allowed, not logged.
  allowUnionTypes: true,
} as const;

/** One pool per process, as Fastify keeps: compilers with equal schemas and options are shared. */
const pool = AjvCompiler();

/** The request parts whose values are text and may be parsed by their schema. */
export const TEXT_PARTS: ReadonlySet<string> = new Set(["querystring", "params", "headers"]);

/**
 * For Fastify's `schemaController.compilersFactory.buildValidator`: the server's
 * `ajv` options as given for the text parts, the same options with
 * `coerceTypes: false` for everything else (the body).
 */
export const buildPartAwareValidator: BuildCompilerFromPool = (
  externalSchemas: ExternalSchemas,
  options?: CompilerOptions,
) => {
  const given = (options ?? {}) as CompilerOptions & { customOptions?: Record<string, unknown> };
  const textCompiler = pool(externalSchemas, given);
  const jsonCompiler = pool(externalSchemas, {
    ...given,
    customOptions: { ...given.customOptions, coerceTypes: false },
  } as CompilerOptions);
  return (route) => {
    if (route.httpPart === "headers") {
      return textCompiler({ ...route, schema: lowerCaseHeaderNames(route.schema) as typeof route.schema });
    }
    return TEXT_PARTS.has(route.httpPart ?? "") ? textCompiler(route) : jsonCompiler(route);
  };
};

/**
 * A route's `validatorCompiler` for a route whose 400 names every bad field at once: the same
 * rule per part and the service's options, with ajv's `allErrors` on. Only for small bodies whose
 * schema bounds them (`additionalProperties: false`, a handful of fields): the CPU allErrors costs
 * grows with the body. The route reads the errors with `attachValidation` (request.validationError).
 *
 * @example
 * app.post("/v1/payments", { schema: { body }, attachValidation: true, validatorCompiler: everyErrorValidatorCompiler }, h);
 */
export const everyErrorValidatorCompiler = buildPartAwareValidator({}, {
  customOptions: { ...serviceAjvOptions, allErrors: true },
} as CompilerOptions);
