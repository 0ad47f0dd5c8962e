/**
 * PromQL text → syntax tree, with Prometheus's type checks (a range where an instant vector is
 * needed, a comparison of scalars without `bool`, a selector with only empty matchers …) so a
 * bad query is refused before it touches data, with a message naming the problem. A
 * hand-written lexer and a precedence-climbing parser: `or` < `and unless` < comparisons <
 * `+ -` < `* / % atan2` < unary minus < `^` (right-associative), as in Prometheus's grammar.
 *
 * @example
 * parsePromql('sum by (job) (rate(http_requests_total{code=~"5.."}[5m]))');
 * parsePromql("1 > 2"); // throws PromqlSyntaxError: comparisons between scalars must use BOOL modifier
 */

import { parsePromDurationMs } from "@casebook/kit/prom-duration";
import { type LabelMatcher, labelMatcher, MatcherRegexError, type MatchType } from "./label-matcher.ts";
import { LABEL_NAME_PATTERN, METRIC_NAME } from "./labels.ts";
import {
  type AggregateOp,
  type AtModifier,
  type BinaryOp,
  COMPARISON_OPS,
  type Expr,
  SET_OPS,
  type ValueType,
  type VectorMatching,
  type VectorSelector,
} from "./promql-ast.ts";
import { FUNCTIONS } from "./promql-functions-table.ts";

export class PromqlSyntaxError extends Error {
  readonly position: number;
  constructor(message: string, position: number) {
    super(message);
    this.name = "PromqlSyntaxError";
    this.position = position;
  }
}

/** Longest query text accepted: a bound on parse work. */
export const MAX_QUERY_CHARS = 64 * 1024;

type TokenKind = "ident" | "number" | "duration" | "string" | "op" | "eof";
interface Token {
  readonly kind: TokenKind;
  readonly text: string;
  readonly pos: number;
  readonly value?: number | string;
}

const AGGREGATORS: ReadonlySet<string> = new Set([
  "sum",
  "avg",
  "count",
  "min",
  "max",
  "group",
  "stddev",
  "stdvar",
  "topk",
  "bottomk",
  "count_values",
  "quantile",
]);
const PARAM_AGGREGATORS: ReadonlySet<string> = new Set(["topk", "bottomk", "count_values", "quantile"]);
const KEYWORD_OPS: ReadonlySet<string> = new Set(["and", "or", "unless", "atan2"]);
const PRECEDENCE: Readonly<Record<string, number>> = {
  or: 1,
  and: 2,
  unless: 2,
  "==": 3,
  "!=": 3,
  "<=": 3,
  "<": 3,
  ">=": 3,
  ">": 3,
  "+": 4,
  "-": 4,
  "*": 5,
  "/": 5,
  "%": 5,
  atan2: 5,
  "^": 7,
};
const UNARY_PRECEDENCE = 6;
const OPERATORS = ["=~", "!~", "==", "!=", "<=", ">=", "<", ">", "=", "+", "-", "*", "/", "%", "^"];
const PUNCT = "(){}[],:@";

function unquote(raw: string, pos: number): string {
  const quote = raw[0];
  const body = raw.slice(1, -1);
  if (quote === "`") return body;
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== "\\") {
      out += c;
      continue;
    }
    const e = body[++i];
    const simple: Record<string, string> = {
      n: "\n",
      t: "\t",
      r: "\r",
      a: "\x07",
      b: "\b",
      f: "\f",
      v: "\v",
    };
    if (e === undefined) throw new PromqlSyntaxError("unterminated escape in string", pos);
    if (e in simple) out += simple[e];
    else if (e === "\\" || e === '"' || e === "'") out += e;
    else if (e === "x" || e === "u" || e === "U") {
      const len = e === "x" ? 2 : e === "u" ? 4 : 8;
      const hex = body.slice(i + 1, i + 1 + len);
      if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex))
        throw new PromqlSyntaxError("invalid escape in string", pos);
      out += String.fromCodePoint(Number.parseInt(hex, 16));
      i += len;
    } else if (/[0-7]/.test(e)) {
      const oct = body.slice(i, i + 3);
      if (!/^[0-7]{3}$/.test(oct)) throw new PromqlSyntaxError("invalid escape in string", pos);
      out += String.fromCharCode(Number.parseInt(oct, 8));
      i += 2;
    } else throw new PromqlSyntaxError(`unknown escape sequence \\${e}`, pos);
  }
  return out;
}

function lex(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  // Inside [...] a colon separates a subquery's range from its step: never part of a name.
  let bracketDepth = 0;
  while (i < input.length) {
    const c = input[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === "#") {
      while (i < input.length && input[i] !== "\n") i++;
      continue;
    }
    const start = i;
    const rest = input.slice(i);
    const number = /^(0[xX][0-9a-fA-F]+|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)/.exec(rest);
    if (number) {
      const duration = /^(\d+(ms|[smhdwy]))+/.exec(rest);
      if (duration && duration[0].length > number[0].length) {
        tokens.push({
          kind: "duration",
          text: duration[0],
          pos: start,
          value: parsePromDurationMs(duration[0])!,
        });
        i += duration[0].length;
        continue;
      }
      if (/^[a-zA-Z_]/.test(rest.slice(number[0].length)) && !/^0[xX]/.test(number[0])) {
        throw new PromqlSyntaxError(
          `bad number or duration syntax: "${rest.slice(0, number[0].length + 1)}"`,
          start,
        );
      }
      tokens.push({ kind: "number", text: number[0], pos: start, value: Number(number[0]) });
      i += number[0].length;
      continue;
    }
    const ident = (bracketDepth > 0 ? /^[a-zA-Z_][a-zA-Z0-9_]*/ : /^[a-zA-Z_:][a-zA-Z0-9_:]*/).exec(rest);
    if (ident) {
      tokens.push({ kind: "ident", text: ident[0], pos: start });
      i += ident[0].length;
      continue;
    }
    if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < input.length && input[j] !== c) {
        if (input[j] === "\\" && c !== "`") j++;
        if (input[j] === "\n" && c !== "`") throw new PromqlSyntaxError("unterminated quoted string", start);
        j++;
      }
      if (j >= input.length) throw new PromqlSyntaxError("unterminated quoted string", start);
      const raw = input.slice(i, j + 1);
      tokens.push({ kind: "string", text: raw, pos: start, value: unquote(raw, start) });
      i = j + 1;
      continue;
    }
    const op = OPERATORS.find((o) => rest.startsWith(o));
    if (op) {
      tokens.push({ kind: "op", text: op, pos: start });
      i += op.length;
      continue;
    }
    if (PUNCT.includes(c)) {
      if (c === "[") bracketDepth++;
      if (c === "]") bracketDepth = Math.max(0, bracketDepth - 1);
      tokens.push({ kind: "op", text: c, pos: start });
      i++;
      continue;
    }
    throw new PromqlSyntaxError(`unexpected character: ${JSON.stringify(c)}`, start);
  }
  tokens.push({ kind: "eof", text: "", pos: input.length });
  return tokens;
}

/** The value type an expression produces (Prometheus's `Type()`). */
export function typeOf(expr: Expr): ValueType {
  switch (expr.kind) {
    case "vector":
      return "vector";
    case "matrix":
    case "subquery":
      return "matrix";
    case "number":
      return "scalar";
    case "string":
      return "string";
    case "paren":
    case "unary":
      return typeOf(expr.expr);
    case "binary":
      return typeOf(expr.lhs) === "scalar" && typeOf(expr.rhs) === "scalar" ? "scalar" : "vector";
    case "aggregate":
      return "vector";
    case "call":
      return FUNCTIONS.get(expr.func)!.returns;
  }
}

const TYPE_NAMES: Record<ValueType, string> = {
  scalar: "scalar",
  vector: "instant vector",
  matrix: "range vector",
  string: "string",
};

class Parser {
  readonly #tokens: Token[];
  #i = 0;

  constructor(tokens: Token[]) {
    this.#tokens = tokens;
  }

  get #peek(): Token {
    return this.#tokens[this.#i]!;
  }
  #next(): Token {
    return this.#tokens[this.#i++]!;
  }
  #is(text: string): boolean {
    const t = this.#peek;
    return (t.kind === "op" && t.text === text) || (t.kind === "ident" && t.text.toLowerCase() === text);
  }
  #expect(text: string, context: string): Token {
    if (!this.#is(text))
      this.#fail(`unexpected ${this.#describe(this.#peek)} in ${context}, expected "${text}"`);
    return this.#next();
  }
  #describe(t: Token): string {
    return t.kind === "eof" ? "end of input" : `${t.kind === "op" ? "" : `${t.kind} `}"${t.text}"`;
  }
  #fail(message: string, pos = this.#peek.pos): never {
    throw new PromqlSyntaxError(message, pos);
  }

  parse(): Expr {
    if (this.#peek.kind === "eof") this.#fail("no expression found in input");
    const expr = this.#expr(0);
    const rest = this.#peek;
    if (rest.kind !== "eof") this.#fail(`unexpected ${this.#describe(rest)}`);
    return expr;
  }

  #binaryOp(): BinaryOp | undefined {
    const t = this.#peek;
    if (t.kind === "op" && t.text in PRECEDENCE) return t.text as BinaryOp;
    if (t.kind === "ident" && KEYWORD_OPS.has(t.text.toLowerCase())) return t.text.toLowerCase() as BinaryOp;
    return undefined;
  }

  #expr(minPrecedence: number): Expr {
    let lhs = this.#unary();
    for (;;) {
      const op = this.#binaryOp();
      if (op === undefined) return lhs;
      const precedence = PRECEDENCE[op]!;
      if (precedence < minPrecedence) return lhs;
      const opToken = this.#next();
      const { returnBool, matching } = this.#binaryModifiers(op);
      const rhs = this.#expr(op === "^" ? precedence : precedence + 1);
      lhs = this.#binary(op, lhs, rhs, returnBool, matching, opToken.pos);
    }
  }

  #binaryModifiers(op: BinaryOp): {
    returnBool: boolean;
    matching: Omit<VectorMatching, "card"> & { group?: "left" | "right" };
  } {
    let returnBool = false;
    if (this.#is("bool")) {
      this.#next();
      returnBool = true;
    }
    let on = false;
    let labels: string[] = [];
    let group: "left" | "right" | undefined;
    let include: string[] = [];
    if (this.#is("on") || this.#is("ignoring")) {
      on = this.#next().text.toLowerCase() === "on";
      labels = this.#labelList();
      if (this.#is("group_left") || this.#is("group_right")) {
        group = this.#next().text.toLowerCase() === "group_left" ? "left" : "right";
        include = this.#is("(") ? this.#labelList() : [];
      }
    }
    if (group && SET_OPS.has(op)) this.#fail(`no grouping allowed for "${op}" operation`);
    for (const name of include) {
      if (on && labels.includes(name))
        this.#fail(`label "${name}" must not occur in ON and GROUP clause at once`);
    }
    return { returnBool, matching: { on, labels, include, ...(group ? { group } : {}) } };
  }

  #binary(
    op: BinaryOp,
    lhs: Expr,
    rhs: Expr,
    returnBool: boolean,
    modifiers: Omit<VectorMatching, "card"> & { group?: "left" | "right" },
    pos: number,
  ): Expr {
    const lt = typeOf(lhs);
    const rt = typeOf(rhs);
    for (const t of [lt, rt]) {
      if (t !== "scalar" && t !== "vector")
        this.#fail("binary expression must contain only scalar and instant vector types", pos);
    }
    const comparison = COMPARISON_OPS.has(op);
    if (returnBool && !comparison) this.#fail("bool modifier can only be used on comparison operators", pos);
    if (comparison && lt === "scalar" && rt === "scalar" && !returnBool) {
      this.#fail("comparisons between scalars must use BOOL modifier", pos);
    }
    const bothVectors = lt === "vector" && rt === "vector";
    const hasModifiers = modifiers.labels.length > 0 || modifiers.on || modifiers.group !== undefined;
    if (!bothVectors && hasModifiers) this.#fail("vector matching only allowed between instant vectors", pos);
    if (SET_OPS.has(op) && !bothVectors) {
      this.#fail(`set operator "${op}" not allowed in binary scalar expression`, pos);
    }
    let matching: VectorMatching | undefined;
    if (bothVectors) {
      const card = SET_OPS.has(op)
        ? "many-to-many"
        : modifiers.group === "left"
          ? "many-to-one"
          : modifiers.group === "right"
            ? "one-to-many"
            : "one-to-one";
      matching = { card, on: modifiers.on, labels: modifiers.labels, include: modifiers.include };
    }
    return { kind: "binary", op, lhs, rhs, returnBool, matching };
  }

  #unary(): Expr {
    if (this.#is("-") || this.#is("+")) {
      const token = this.#next();
      const op = token.text as "-" | "+";
      const expr = this.#expr(UNARY_PRECEDENCE);
      const t = typeOf(expr);
      if (t !== "scalar" && t !== "vector") {
        this.#fail(
          `unary expression only allowed on expressions of type scalar or instant vector, got "${t}"`,
          token.pos,
        );
      }
      if (expr.kind === "number") return { kind: "number", value: op === "-" ? -expr.value : expr.value };
      return op === "+" ? expr : { kind: "unary", op, expr };
    }
    return this.#postfix(this.#primary());
  }

  #postfix(base: Expr): Expr {
    let expr = base;
    for (;;) {
      if (this.#is("[")) expr = this.#range(expr);
      else if (this.#is("offset")) expr = this.#offset(expr);
      else if (this.#is("@")) expr = this.#at(expr);
      else return expr;
    }
  }

  #duration(context: string): number {
    const t = this.#next();
    if (t.kind !== "duration")
      this.#fail(`unexpected ${this.#describe(t)} in ${context}, expected duration`, t.pos);
    return t.value as number;
  }

  #range(expr: Expr): Expr {
    const open = this.#next();
    const rangeMs = this.#duration("subquery or range");
    if (this.#is(":")) {
      this.#next();
      const stepMs = this.#is("]") ? undefined : this.#duration("subquery");
      this.#expect("]", "subquery");
      const t = typeOf(expr);
      if (t !== "vector" && t !== "scalar")
        this.#fail(`subquery is only allowed on instant vector, got ${TYPE_NAMES[t]}`, open.pos);
      if (stepMs === 0) this.#fail("zero step in subquery", open.pos);
      return { kind: "subquery", expr, rangeMs, stepMs, offsetMs: 0, at: undefined };
    }
    this.#expect("]", "range");
    if (expr.kind !== "vector") this.#fail("ranges only allowed for vector selectors", open.pos);
    if (expr.offsetMs !== 0 || expr.at !== undefined)
      this.#fail("no offset or @ modifier allowed before range", open.pos);
    if (rangeMs === 0) this.#fail("range must be greater than zero", open.pos);
    return { kind: "matrix", selector: expr, rangeMs };
  }

  #offset(expr: Expr): Expr {
    const token = this.#next();
    const negative = this.#is("-");
    if (negative) this.#next();
    const ms = (negative ? -1 : 1) * this.#duration("offset");
    const target = expr.kind === "matrix" ? expr.selector : expr;
    if (target.kind !== "vector" && target.kind !== "subquery") {
      this.#fail(
        "offset modifier must be preceded by an instant vector selector or range vector selector or a subquery",
        token.pos,
      );
    }
    if (target.offsetMs !== 0) this.#fail("offset may not be set multiple times", token.pos);
    const updated = { ...target, offsetMs: ms };
    return expr.kind === "matrix" ? { ...expr, selector: updated as VectorSelector } : updated;
  }

  #at(expr: Expr): Expr {
    const token = this.#next();
    let at: AtModifier;
    if (this.#is("start") || this.#is("end")) {
      const which = this.#next().text.toLowerCase() as "start" | "end";
      this.#expect("(", "@ modifier");
      this.#expect(")", "@ modifier");
      at = { kind: which };
    } else {
      const negative = this.#is("-");
      if (negative || this.#is("+")) this.#next();
      const t = this.#next();
      if (t.kind !== "number") this.#fail("unexpected token in @ modifier, expected a timestamp", t.pos);
      const seconds = (negative ? -1 : 1) * (t.value as number);
      if (!Number.isFinite(seconds)) this.#fail("timestamp out of bounds for @ modifier", t.pos);
      at = { kind: "time", ms: Math.round(seconds * 1000) };
    }
    const target = expr.kind === "matrix" ? expr.selector : expr;
    if (target.kind !== "vector" && target.kind !== "subquery") {
      this.#fail(
        "@ modifier must be preceded by an instant vector selector or range vector selector or a subquery",
        token.pos,
      );
    }
    if (target.at !== undefined) this.#fail("@ <timestamp> may not be set multiple times", token.pos);
    const updated = { ...target, at };
    return expr.kind === "matrix" ? { ...expr, selector: updated as VectorSelector } : updated;
  }

  #primary(): Expr {
    const t = this.#peek;
    if (t.kind === "number") {
      this.#next();
      return { kind: "number", value: t.value as number };
    }
    if (t.kind === "string") {
      this.#next();
      return { kind: "string", value: t.value as string };
    }
    if (this.#is("(")) {
      this.#next();
      const expr = this.#expr(0);
      this.#expect(")", "paren expression");
      return { kind: "paren", expr };
    }
    if (this.#is("{")) return this.#selector(undefined, t.pos);
    if (t.kind === "ident") {
      const lower = t.text.toLowerCase();
      const after = this.#tokens[this.#i + 1]!;
      if (
        AGGREGATORS.has(lower) &&
        (after.text === "(" || ["by", "without"].includes(after.text.toLowerCase()))
      ) {
        return this.#aggregate();
      }
      if (lower === "inf" || lower === "nan") {
        this.#next();
        return { kind: "number", value: lower === "inf" ? Number.POSITIVE_INFINITY : Number.NaN };
      }
      if (after.kind === "op" && after.text === "(") return this.#call();
      if (KEYWORD_OPS.has(lower) || AGGREGATORS.has(lower)) this.#fail(`unexpected ${this.#describe(t)}`);
      this.#next();
      return this.#selector(t.text, t.pos);
    }
    this.#fail(`unexpected ${this.#describe(t)}`);
  }

  #labelList(): string[] {
    this.#expect("(", "grouping opts");
    const names: string[] = [];
    while (!this.#is(")")) {
      const t = this.#next();
      if (t.kind !== "ident" || !LABEL_NAME_PATTERN.test(t.text)) {
        this.#fail(`unexpected ${this.#describe(t)} in grouping opts, expected label`, t.pos);
      }
      names.push(t.text);
      if (!this.#is(")")) this.#expect(",", "grouping opts");
    }
    this.#next();
    return names;
  }

  #aggregate(): Expr {
    const opToken = this.#next();
    const op = opToken.text.toLowerCase() as AggregateOp;
    let grouping: string[] = [];
    let without = false;
    let clause = false;
    if (this.#is("by") || this.#is("without")) {
      without = this.#next().text.toLowerCase() === "without";
      grouping = this.#labelList();
      clause = true;
    }
    this.#expect("(", "aggregation");
    const args: Expr[] = [];
    while (!this.#is(")")) {
      args.push(this.#expr(0));
      if (!this.#is(")")) this.#expect(",", "aggregation");
    }
    this.#next();
    if (!clause && (this.#is("by") || this.#is("without"))) {
      without = this.#next().text.toLowerCase() === "without";
      grouping = this.#labelList();
    }
    const wantsParam = PARAM_AGGREGATORS.has(op);
    if (args.length !== (wantsParam ? 2 : 1)) {
      this.#fail(
        `wrong number of arguments for aggregate expression provided, expected ${wantsParam ? 2 : 1}, got ${args.length}`,
        opToken.pos,
      );
    }
    const expr = args.at(-1)!;
    const param = wantsParam ? args[0] : undefined;
    if (typeOf(expr) !== "vector") {
      this.#fail(
        `expected type instant vector in aggregation expression, got ${TYPE_NAMES[typeOf(expr)]}`,
        opToken.pos,
      );
    }
    if (param !== undefined) {
      const want = op === "count_values" ? "string" : "scalar";
      if (typeOf(param) !== want) {
        this.#fail(
          `expected type ${TYPE_NAMES[want]} in aggregation parameter, got ${TYPE_NAMES[typeOf(param)]}`,
          opToken.pos,
        );
      }
    }
    return { kind: "aggregate", op, expr, param, grouping, without };
  }

  #call(): Expr {
    const nameToken = this.#next();
    const signature = FUNCTIONS.get(nameToken.text);
    if (signature === undefined) this.#fail(`unknown function with name "${nameToken.text}"`, nameToken.pos);
    this.#expect("(", "function call");
    const args: Expr[] = [];
    while (!this.#is(")")) {
      args.push(this.#expr(0));
      if (!this.#is(")")) this.#expect(",", "function call");
    }
    this.#next();
    const min =
      signature.optional === -1 ? signature.args.length - 1 : signature.args.length - signature.optional;
    const max = signature.optional === -1 ? Number.POSITIVE_INFINITY : signature.args.length;
    if (args.length < min || args.length > max) {
      this.#fail(
        `expected ${min === max ? min : `at least ${min}`} argument(s) in call to "${nameToken.text}", got ${args.length}`,
        nameToken.pos,
      );
    }
    for (let i = 0; i < args.length; i++) {
      const want = signature.args[Math.min(i, signature.args.length - 1)]!;
      const got = typeOf(args[i]!);
      if (got !== want) {
        this.#fail(
          `expected type ${TYPE_NAMES[want]} in call to function "${nameToken.text}", got ${TYPE_NAMES[got]}`,
          nameToken.pos,
        );
      }
    }
    return { kind: "call", func: nameToken.text, args };
  }

  #selector(name: string | undefined, pos: number): VectorSelector {
    const matchers: LabelMatcher[] = [];
    if (this.#is("{")) {
      this.#next();
      while (!this.#is("}")) {
        const label = this.#next();
        if (label.kind !== "ident" || !LABEL_NAME_PATTERN.test(label.text)) {
          this.#fail(`unexpected ${this.#describe(label)} in label matching, expected label`, label.pos);
        }
        const op = this.#next();
        if (op.kind !== "op" || !["=", "!=", "=~", "!~"].includes(op.text)) {
          this.#fail(
            `unexpected ${this.#describe(op)} in label matching, expected label matching operator`,
            op.pos,
          );
        }
        const value = this.#next();
        if (value.kind !== "string")
          this.#fail(`unexpected ${this.#describe(value)} in label matching, expected string`, value.pos);
        try {
          matchers.push(labelMatcher(op.text as MatchType, label.text, value.value as string));
        } catch (error) {
          if (error instanceof MatcherRegexError) this.#fail(error.message, value.pos);
          throw error;
        }
        if (!this.#is("}")) this.#expect(",", "label matching");
      }
      this.#next();
    }
    if (name !== undefined) {
      if (matchers.some((m) => m.name === METRIC_NAME)) this.#fail("metric name must not be set twice", pos);
      matchers.unshift(labelMatcher("=", METRIC_NAME, name));
    }
    if (!matchers.some((m) => !m.matches(""))) {
      this.#fail("vector selector must contain at least one non-empty matcher", pos);
    }
    return { kind: "vector", name, matchers, offsetMs: 0, at: undefined };
  }
}

/** Parses a PromQL expression; throws PromqlSyntaxError with Prometheus's message. */
export function parsePromql(input: string): Expr {
  if (input.length > MAX_QUERY_CHARS)
    throw new PromqlSyntaxError(`query longer than ${MAX_QUERY_CHARS} characters`, 0);
  return new Parser(lex(input)).parse();
}
