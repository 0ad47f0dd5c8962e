/**
 * The media flow of the send service (CH-24; the steps are in `domain/media.ts`): it grants
 * uploads and downloads as pre-signed URLs and resolves the reference a message carries. It
 * holds the three parts together — the media rows (who uploaded what), the object store (the
 * bytes) and the URL signer — so the routes and the send path stay one call each.
 *
 * @example
 * const grant = await media.authorizeUpload("ana", { contentType: "image/png", bytes: 2_048 }, origin);
 * // the app PUTs the bytes to grant.upload.url, then sends a message with mediaId = grant.media.id
 * const ref = await media.refForSend("ana", grant.media.id); // { id, contentType, bytes, sha256 }
 */
import { assert } from "@casebook/kit/assert";
import type { Clock } from "@casebook/kit/clock";
import { checkMediaRequest, type MediaRef, type SignedRequest, UPLOAD_URL_TTL_MS } from "../domain/media.ts";
import { errors } from "../errors.ts";
import type { MediaRow, MediaStore } from "../store/media-store.ts";
import type { ObjectDirectory } from "../store/object-directory.ts";
import type { MediaUrls } from "./media-urls.ts";

export interface MediaLibraryOptions {
  readonly rows: MediaStore;
  readonly objects: ObjectDirectory;
  readonly urls: MediaUrls;
  readonly ids: { next(): bigint };
  readonly clock: Clock;
  /** Largest upload (CHAT_MEDIA_MAX_BYTES). */
  readonly maxBytes: number;
  /** The object store's base URL as clients reach it (CHAT_MEDIA_URL); unset = the API's origin per request. */
  readonly publicUrl: string | undefined;
}

/** A media row whose bytes are stored (its digest known). */
type StoredMedia = MediaRow & { readonly sha256: string };

export interface MediaView {
  readonly media: Omit<MediaRef, "sha256"> & { sha256: string | null; status: "pending" | "stored" };
}

export class MediaLibrary {
  readonly #o: MediaLibraryOptions;

  constructor(options: MediaLibraryOptions) {
    this.#o = options;
  }

  get objects(): ObjectDirectory {
    return this.#o.objects;
  }

  get urls(): MediaUrls {
    return this.#o.urls;
  }

  /** Step 1: a pending media row of the owner and the URL its bytes go to. */
  async authorizeUpload(
    ownerId: string,
    input: { contentType: string; bytes: number },
    origin: string,
  ): Promise<MediaView & { upload: SignedRequest }> {
    const problem = checkMediaRequest(input, this.#o.maxBytes);
    if (problem)
      throw errors.create("CHAT_MEDIA_INVALID", { detail: problem.detail, fields: { field: problem.field } });
    const nowMs = this.#o.clock.nowMs();
    const row = await this.#o.rows.authorize({
      id: this.#o.ids.next(),
      ownerId,
      ...input,
      nowMs,
      expiresAtMs: nowMs + UPLOAD_URL_TTL_MS,
    });
    const key = String(row.id);
    return {
      media: viewOf(row),
      upload: this.#o.urls.upload(this.#base(origin), key, row.contentType, row.bytes),
    };
  }

  /**
   * Step 3: the reference a message of `senderId` carries — media the sender uploaded, or may
   * see (forwarding), whose bytes are stored. The first reference records the digest.
   */
  async refForSend(senderId: string, mediaId: string): Promise<MediaRef> {
    const row = await this.#stored(senderId, mediaId);
    return { id: mediaId, contentType: row.contentType, bytes: row.bytes, sha256: row.sha256 };
  }

  /** Step 4: the media and a URL to download it, for its uploader or a member who was sent it. */
  async download(
    viewer: string,
    mediaId: string,
    origin: string,
  ): Promise<MediaView & { download: SignedRequest }> {
    const row = await this.#stored(viewer, mediaId);
    return {
      media: viewOf(row),
      download: this.#o.urls.download(this.#base(origin), mediaId, row.contentType),
    };
  }

  async #stored(viewer: string, mediaId: string): Promise<StoredMedia> {
    const row = await this.#o.rows.readableBy(BigInt(mediaId), viewer);
    if (row === undefined)
      throw errors.create("CHAT_MEDIA_NOT_FOUND", { fields: { field: "mediaId", mediaId } });
    if (row.sha256 !== undefined) return row as StoredMedia;
    // Not yet seen stored: the PUT may have landed since (only the uploader can be here).
    const stored = await this.#o.objects.digest(mediaId);
    // No object: never uploaded — or swept just now (the orphan sweep deletes the row first).
    if (stored === undefined) {
      const swept = !(await this.#o.rows.existing([row.id])).has(row.id);
      throw errors.create(swept ? "CHAT_MEDIA_NOT_FOUND" : "CHAT_MEDIA_NOT_UPLOADED", {
        fields: { field: "mediaId", mediaId },
      });
    }
    const marked = await this.#o.rows.markStored(row.id, stored.sha256, this.#o.clock.nowMs());
    if (marked === undefined)
      throw errors.create("CHAT_MEDIA_NOT_FOUND", { fields: { field: "mediaId", mediaId } });
    assert(marked.sha256 !== undefined, "a media marked stored has its digest");
    return marked as StoredMedia;
  }

  #base(origin: string): string {
    return this.#o.publicUrl ?? origin;
  }
}

function viewOf(row: MediaRow): MediaView["media"] {
  return {
    id: String(row.id),
    contentType: row.contentType,
    bytes: row.bytes,
    sha256: row.sha256 ?? null,
    status: row.sha256 === undefined ? "pending" : "stored",
  };
}
