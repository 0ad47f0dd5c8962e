/**
 * Splits a child's output stream into lines so each can carry the child's name.
 * A line longer than `maxLineChars` is cut and emitted in pieces, so a child
 * that never writes a newline cannot grow the buffer without bound.
 *
 * @example
 * const splitter = new LineSplitter(16_384, (line) => console.log(`alpha | ${line}`));
 * splitter.push("one\ntw");
 * splitter.push("o\n"); // prints "alpha | one", then "alpha | two"
 * splitter.end();
 */
export class LineSplitter {
  readonly #maxLineChars: number;
  readonly #onLine: (line: string) => void;
  #partial = "";

  constructor(maxLineChars: number, onLine: (line: string) => void) {
    if (!(maxLineChars >= 1)) throw new RangeError(`maxLineChars must be >= 1, got ${maxLineChars}`);
    this.#maxLineChars = maxLineChars;
    this.#onLine = onLine;
  }

  /** Feeds decoded text (decode with setEncoding("utf8") so characters are never split). */
  push(chunk: string): void {
    let text = this.#partial + chunk;
    let newline = text.indexOf("\n");
    while (newline !== -1) {
      this.#emit(text.slice(0, newline));
      text = text.slice(newline + 1);
      newline = text.indexOf("\n");
    }
    while (text.length >= this.#maxLineChars) {
      this.#emit(text.slice(0, this.#maxLineChars));
      text = text.slice(this.#maxLineChars);
    }
    this.#partial = text;
  }

  /** Emits what is left when the stream ends without a final newline. */
  end(): void {
    if (this.#partial !== "") this.#emit(this.#partial);
    this.#partial = "";
  }

  #emit(line: string): void {
    this.#onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
  }
}
