/**
 * Text PostgreSQL cannot store, refused at the edge: U+0000 (`text` and `jsonb`
 * reject it: "invalid byte sequence" / "unsupported Unicode escape sequence")
 * and lone UTF-16 surrogates (no UTF-8 encoding exists for them). Before this
 * guard such a string reached the database and the request ended in a 500;
 * now it is a 400 naming the field, whatever the route does with it.
 *
 * The same walk refuses `__proto__` keys and `constructor.prototype` in a body:
 * merged into an object later (`{ ...defaults, ...body }` is safe, a deep merge
 * is not) they rewrite prototypes.
 *
 * The walk is iterative (a 100 000-deep array cannot overflow the stack) and
 * visits each value and key once, so its work is bounded by the body limit.
 *
 * @example
 * findUnacceptableText({ name: "a\u0000b" }, "/body");
 * // { field: "/body/name", message: "must not contain U+0000 (NUL): PostgreSQL cannot store it" }
 * installTextGuard(app); // params and querystring, before validation
 */
import { commonErrors } from "@casebook/kit/errors";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { escapePointer, type FieldError } from "./problem.ts";

const NUL_MESSAGE = "must not contain U+0000 (NUL): PostgreSQL cannot store it";
const SURROGATE_MESSAGE =
  "must be well-formed Unicode: a lone UTF-16 surrogate has no UTF-8 encoding to store";
const PROTO_MESSAGE =
  "`__proto__` is refused as a key: merged into an object it would replace that object's prototype";
const CONSTRUCTOR_MESSAGE =
  "`constructor.prototype` is refused: merged into an object it would rewrite a shared prototype";

/** Why `text` cannot be stored, or undefined when it can. */
export function unstorableTextReason(text: string): string | undefined {
  if (text.includes("\u0000")) return NUL_MESSAGE;
  if (!text.isWellFormed()) return SURROGATE_MESSAGE;
  return undefined;
}

/** A value still to visit: its place is kept as its parent and its key, spelled out only for an error. */
interface Visit {
  readonly value: unknown;
  readonly parent: Visit | undefined;
  readonly segment: string | number;
}

/** The JSON pointer of `visit`, from `base` down (built only when a problem is found). */
function pointerOf(visit: Visit, base: string): string {
  const segments: string[] = [];
  for (let at: Visit | undefined = visit; at?.parent !== undefined; at = at.parent) {
    segments.push(typeof at.segment === "number" ? String(at.segment) : escapePointer(at.segment));
  }
  return segments.length === 0 ? base : `${base}/${segments.reverse().join("/")}`;
}

/** A problem with `key` of the object at `parent` (pointers under `base`), or undefined. */
function keyProblem(key: string, value: unknown, parent: Visit, base: string): FieldError | undefined {
  const reason = unstorableTextReason(key);
  // JSON.stringify writes NUL and lone surrogates as \uXXXX escapes: the answer itself stays storable.
  if (reason !== undefined) {
    return { field: pointerOf(parent, base), message: `has a key ${JSON.stringify(key)} that ${reason}` };
  }
  if (key === "__proto__") return { field: `${pointerOf(parent, base)}/__proto__`, message: PROTO_MESSAGE };
  if (
    key === "constructor" &&
    typeof value === "object" &&
    value !== null &&
    Object.hasOwn(value, "prototype")
  ) {
    return { field: `${pointerOf(parent, base)}/constructor/prototype`, message: CONSTRUCTOR_MESSAGE };
  }
  return undefined;
}

/**
 * The first string value or object key under `root` that cannot be stored (or a
 * prototype-poisoning key), as a field error whose pointer starts at `base`
 * (`/body`, `/params`, `/querystring`); undefined when everything is acceptable.
 */
export function findUnacceptableText(root: unknown, base: string): FieldError | undefined {
  const stack: Visit[] = [{ value: root, parent: undefined, segment: "" }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const visit = next;
    const value = visit.value;
    if (typeof value === "string") {
      const reason = unstorableTextReason(value);
      if (reason !== undefined) return { field: pointerOf(visit, base), message: reason };
    } else if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) {
        stack.push({ value: value[index], parent: visit, segment: index });
      }
    } else if (typeof value === "object" && value !== null) {
      const keys = Object.keys(value);
      for (let index = keys.length - 1; index >= 0; index--) {
        const key = keys[index] as string;
        const child = (value as Record<string, unknown>)[key];
        const problem = keyProblem(key, child, visit, base);
        if (problem !== undefined) return problem;
        stack.push({ value: child, parent: visit, segment: key });
      }
    }
  }
  return undefined;
}

/** The 400 a field error becomes: the house REQUEST_INVALID shape, like a schema violation. */
export function unacceptableTextError(problem: FieldError) {
  return commonErrors.create("REQUEST_INVALID", { fields: { errors: [problem] } });
}

/** Checks the text parts a route receives (path params, query string) before validation and the handler. */
function guardTextParts(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  const problem =
    findUnacceptableText(request.params, "/params") ?? findUnacceptableText(request.query, "/querystring");
  // A callback hook: no promise per request on every route.
  done(problem === undefined ? undefined : unacceptableTextError(problem));
}

/**
 * Refuses unstorable text in path params and the query string (`/v1/things/abc%00`
 * decodes to a NUL that would otherwise reach PostgreSQL). Bodies are checked by
 * the JSON parser (json-body.ts), before any hook sees them.
 */
export function installTextGuard(app: FastifyInstance): void {
  app.addHook("preValidation", guardTextParts);
}
