/**
 * The object store of chat's media (CH-24) as a local directory — the default stand-in for
 * S3, with the guarantees the media flow relies on:
 * - **all or nothing**: bytes go to a temporary file, are counted and flushed (fsync), and
 *   only then appear under their key; a PUT cut short leaves nothing under the key;
 * - **exact size**: a body longer than declared is cut off at the first extra byte, a shorter
 *   one refused at its end (OBJECT_SIZE_MISMATCH) — the size was signed into the URL;
 * - **immutable, first write wins**: the file is linked into place (`link` fails if the key
 *   exists, atomically), so two concurrent PUTs of one key cannot both land; a repeat of the
 *   same bytes succeeds (`created: false`), other bytes are refused (OBJECT_EXISTS).
 *
 * Keys are media ids (decimal Snowflakes), checked before any path is built. One flat
 * directory (ext4 indexes large directories); several send services share it only through a
 * shared mount — a real deployment points the URLs at an S3-compatible store instead.
 *
 * @example
 * const objects = new ObjectDirectory("/var/lib/chat-media");
 * await objects.put("7311", request.raw, 2_048); // { sha256, created: true }
 * await objects.digest("7311");                  // { bytes: 2048, sha256 }
 */
import { createHash, randomUUID } from "node:crypto";
import { createReadStream, type ReadStream } from "node:fs";
import { link, mkdir, open, readdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { parseId } from "../domain/conversation.ts";
import { errors } from "../errors.ts";

export interface StoredObject {
  readonly bytes: number;
  readonly sha256: string;
}

function checkKey(key: string): string {
  // A media id (a Snowflake as a decimal), checked before it names a path.
  if (parseId(key) === undefined) throw errors.create("OBJECT_NOT_FOUND", { fields: { key } });
  return key;
}

export class ObjectDirectory {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** Stores exactly `bytes` bytes from `body` under `key`, all or nothing, first write wins. */
  async put(
    key: string,
    body: AsyncIterable<Uint8Array>,
    bytes: number,
  ): Promise<StoredObject & { created: boolean }> {
    const final = join(this.#dir, checkKey(key));
    await mkdir(this.#dir, { recursive: true });
    const temp = join(this.#dir, `.upload-${key}-${randomUUID()}`);
    const file = await open(temp, "wx", 0o640);
    const hash = createHash("sha256");
    let written = 0;
    try {
      for await (const chunk of body) {
        written += chunk.byteLength;
        if (written > bytes) throw sizeMismatch(key, bytes, `more than ${bytes}`);
        hash.update(chunk);
        await file.write(chunk);
      }
      if (written !== bytes) throw sizeMismatch(key, bytes, String(written));
      await file.sync();
    } catch (err) {
      await file.close();
      await unlink(temp);
      throw err;
    }
    await file.close();
    const sha256 = hash.digest("hex");
    try {
      await link(temp, final);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const existing = await this.digest(key);
      if (existing?.sha256 !== sha256) throw errors.create("OBJECT_EXISTS", { fields: { key } });
      return { bytes, sha256, created: false };
    } finally {
      await unlink(temp);
    }
    // The new name is durable once the directory is flushed.
    const dir = await open(this.#dir, "r");
    await dir.sync().finally(() => dir.close());
    return { bytes, sha256, created: true };
  }

  /** The stored object's size, or undefined when nothing is stored under `key`. */
  async size(key: string): Promise<number | undefined> {
    try {
      return (await stat(join(this.#dir, checkKey(key)))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
  }

  /** Size and SHA-256 of the stored object (reads it whole), or undefined. */
  async digest(key: string): Promise<StoredObject | undefined> {
    const path = join(this.#dir, checkKey(key));
    const hash = createHash("sha256");
    let bytes = 0;
    try {
      for await (const chunk of createReadStream(path)) {
        bytes += (chunk as Buffer).byteLength;
        hash.update(chunk as Buffer);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
    return { bytes, sha256: hash.digest("hex") };
  }

  /** Removes the object under `key`; false when nothing was stored there. */
  async remove(key: string): Promise<boolean> {
    return unlink(join(this.#dir, checkKey(key))).then(
      () => true,
      (err: unknown) => ignoreMissing(err) ?? false,
    );
  }

  /**
   * What the directory holds that was last written before `beforeMs`: the objects' keys, and the
   * temporary files of uploads that never finished (a process killed mid-PUT), removed here at
   * once. For the orphan sweep's pass over objects whose row is gone.
   */
  async keysWrittenBefore(beforeMs: number): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.#dir);
    } catch (err) {
      ignoreMissing(err);
      return [];
    }
    const keys: string[] = [];
    for (const name of names) {
      const written = await stat(join(this.#dir, name)).then((s) => s.mtimeMs, ignoreMissing);
      if (written === undefined || written >= beforeMs) continue;
      if (name.startsWith(".upload-")) await unlink(join(this.#dir, name)).catch(ignoreMissing);
      else if (parseId(name) !== undefined) keys.push(name);
    }
    return keys;
  }

  /** The object's bytes as a stream; check `size` first (the caller answers 404 itself). */
  read(key: string): ReadStream {
    return createReadStream(join(this.#dir, checkKey(key)));
  }
}

function sizeMismatch(key: string, declared: number, got: string) {
  return errors.create("OBJECT_SIZE_MISMATCH", {
    detail: `the upload was signed for ${declared} bytes; the body had ${got}`,
    fields: { key, field: "content-length" },
  });
}

function ignoreMissing(err: unknown): undefined {
  if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  return undefined;
}
