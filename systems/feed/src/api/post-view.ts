/** A post as the API writes it: ids as decimal strings, times as ISO 8601. */
import type { Post } from "../domain/ports.ts";

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
