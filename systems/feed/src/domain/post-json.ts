/**
 * A post as the API writes it: ids as decimal strings, times as ISO 8601 — the routes' answers,
 * and the form the post cache keeps bodies in (so a warm page is the bodies joined as they are).
 */
import type { Post } from "./ports.ts";

export interface PostJson {
  id: string;
  authorId: string;
  kind: "post" | "repost";
  text: string | null;
  repostOf: string | null;
  createdAt: string;
  editedAt: string | null;
}

export function toPostJson(post: Post): PostJson {
  return {
    id: post.id.toString(),
    authorId: post.authorId.toString(),
    kind: post.kind,
    text: post.text,
    repostOf: post.repostOf?.toString() ?? null,
    createdAt: new Date(post.createdAtMs).toISOString(),
    editedAt: post.editedAtMs === null ? null : new Date(post.editedAtMs).toISOString(),
  };
}

/** The API's form back to a post (a cached body decoded). */
export function postOfJson(o: PostJson): Post {
  return {
    id: BigInt(o.id),
    authorId: BigInt(o.authorId),
    kind: o.kind,
    text: o.text,
    repostOf: o.repostOf === null ? null : BigInt(o.repostOf),
    createdAtMs: Date.parse(o.createdAt),
    editedAtMs: o.editedAt === null ? null : Date.parse(o.editedAt),
  };
}
