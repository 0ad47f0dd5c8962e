/**
 * An intrusive doubly-linked list: the node carries its own `prev`/`next`, so moving an
 * entry to the back (a hit in an LRU) or unlinking it (an eviction) is O(1) with no
 * allocation and no search. A JS `Map` keeps insertion order too, but peeking its oldest
 * entry walks past every deleted slot since the last rehash: O(n) per eviction in the
 * worst case, where this list is O(1) always.
 *
 * @example
 * const list = new LinkedDeque<{ key: string } & Linked>();
 * const a = { key: "a", prev: null, next: null, list: null };
 * list.pushBack(a);
 * list.moveToBack(a); // a hit
 * list.head;          // the least recently used node: the eviction candidate
 */
export interface Linked {
  prev: Linked | null;
  next: Linked | null;
  /** The list holding this node, or null: guards against unlinking from the wrong list. */
  list: LinkedDeque<Linked> | null;
}

export class LinkedDeque<T extends Linked> {
  #head: T | null = null;
  #tail: T | null = null;
  #length = 0;

  /** The oldest node (least recently pushed or moved), or null when empty. */
  get head(): T | null {
    return this.#head;
  }

  /** The newest node, or null when empty. */
  get tail(): T | null {
    return this.#tail;
  }

  get length(): number {
    return this.#length;
  }

  /** Appends `node`, which must not be in any list. */
  pushBack(node: T): void {
    if (node.list !== null) throw new Error("invariant: a node is in at most one list");
    node.prev = this.#tail;
    node.next = null;
    if (this.#tail === null) this.#head = node;
    else this.#tail.next = node;
    this.#tail = node;
    node.list = this as unknown as LinkedDeque<Linked>;
    this.#length++;
  }

  /** Unlinks `node`, which must be in this list. */
  remove(node: T): void {
    if (node.list !== (this as unknown as LinkedDeque<Linked>)) {
      throw new Error("invariant: remove() needs a node of this list");
    }
    if (node.prev === null) this.#head = node.next as T | null;
    else node.prev.next = node.next;
    if (node.next === null) this.#tail = node.prev as T | null;
    else node.next.prev = node.prev;
    node.prev = null;
    node.next = null;
    node.list = null;
    this.#length--;
  }

  /** Moves `node` (of this list) to the back: the most recently used end. */
  moveToBack(node: T): void {
    if (this.#tail === node) return;
    this.remove(node);
    this.pushBack(node);
  }

  /** Unlinks and returns the head, or null when empty. */
  shift(): T | null {
    const node = this.#head;
    if (node !== null) this.remove(node);
    return node;
  }

  /**
   * Forgets every node at once (O(1)); the dropped nodes keep stale links, so they must
   * not be pushed into a list again.
   */
  clear(): void {
    this.#head = null;
    this.#tail = null;
    this.#length = 0;
  }

  /** Nodes from head (oldest) to tail (newest). */
  *[Symbol.iterator](): IterableIterator<T> {
    // Bounded by the list's length: a cycle (a bug) ends the walk instead of spinning.
    let node = this.#head;
    for (let seen = 0; node !== null && seen < this.#length; seen++) {
      yield node;
      node = node.next as T | null;
    }
  }
}
