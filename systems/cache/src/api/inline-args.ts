/**
 * Splits an inline command line (what telnet, `nc` and redis-cli's scripts send:
 * `SET "a key" 'v'\r\n`) into arguments the way Redis's `sdssplitargs` does: spaces
 * separate, double quotes allow `\n \r \t \b \a \\ \"` and `\xHH` escapes, single
 * quotes only `\'`. A closing quote must be followed by a space or the end.
 * Strings are latin1: one char per byte, so binary arguments survive.
 *
 * @example
 * splitInlineArgs('SET "a\\x41" \'it\\\'s\''); // ["SET", "aA", "it's"]
 * splitInlineArgs('GET "open');               // undefined (unbalanced quotes)
 */

function isSpace(code: number): boolean {
  // isspace() in the C locale: space, \t, \n, \v, \f, \r.
  return code === 32 || (code >= 9 && code <= 13);
}

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

const ESCAPES: Readonly<Record<string, string>> = { n: "\n", r: "\r", t: "\t", b: "\b", a: "\x07" };

interface Token {
  readonly text: string;
  /** Index just past the token, or -1 when its quotes are unbalanced. */
  readonly end: number;
}

function readDoubleQuoted(line: string, start: number): Token {
  let text = "";
  let i = start;
  while (i < line.length) {
    const ch = line[i]!;
    if (ch === "\\" && line[i + 1] === "x" && i + 3 < line.length) {
      const high = hexValue(line.charCodeAt(i + 2));
      const low = hexValue(line.charCodeAt(i + 3));
      if (high >= 0 && low >= 0) {
        text += String.fromCharCode(high * 16 + low);
        i += 4;
        continue;
      }
    }
    if (ch === "\\" && i + 1 < line.length) {
      const next = line[i + 1]!;
      text += ESCAPES[next] ?? next;
      i += 2;
      continue;
    }
    if (ch === '"') {
      // Redis refuses `"a"b`: the closing quote must end the argument.
      if (i + 1 < line.length && !isSpace(line.charCodeAt(i + 1))) return { text, end: -1 };
      return { text, end: i + 1 };
    }
    text += ch;
    i += 1;
  }
  return { text, end: -1 };
}

function readSingleQuoted(line: string, start: number): Token {
  let text = "";
  let i = start;
  while (i < line.length) {
    const ch = line[i]!;
    if (ch === "\\" && line[i + 1] === "'") {
      text += "'";
      i += 2;
      continue;
    }
    if (ch === "'") {
      if (i + 1 < line.length && !isSpace(line.charCodeAt(i + 1))) return { text, end: -1 };
      return { text, end: i + 1 };
    }
    text += ch;
    i += 1;
  }
  return { text, end: -1 };
}

/** One argument starting at `start` (not a space): plain text with quoted runs glued on. */
function readArgument(line: string, start: number): Token {
  let text = "";
  let i = start;
  while (i < line.length && !isSpace(line.charCodeAt(i))) {
    const ch = line[i]!;
    if (ch === '"' || ch === "'") {
      const quoted = ch === '"' ? readDoubleQuoted(line, i + 1) : readSingleQuoted(line, i + 1);
      if (quoted.end < 0) return quoted;
      return { text: text + quoted.text, end: quoted.end };
    }
    text += ch;
    i += 1;
  }
  return { text, end: i };
}

/** The arguments of one inline line (without its line ending), or undefined on unbalanced quotes. */
export function splitInlineArgs(line: string): string[] | undefined {
  const args: string[] = [];
  let i = 0;
  // Each pass consumes at least one character, so the loop is bounded by the line's length.
  while (i < line.length) {
    if (isSpace(line.charCodeAt(i))) {
      i += 1;
      continue;
    }
    const token = readArgument(line, i);
    if (token.end < 0) return undefined;
    args.push(token.text);
    i = token.end;
  }
  return args;
}
