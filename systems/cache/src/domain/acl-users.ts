/**
 * Redis's ACL users, the subset `redis-cli`, ioredis and node-redis use: each user is on or
 * off, has SHA-256 password hashes (never the passwords: `>pw` stores sha256(pw), `#hex` a
 * hash), key patterns, and a set of allowed commands built from `+cmd`, `-cmd`, `+cmd|sub`,
 * `+@category`, `-@category`, `allcommands` and `nocommands`. `requirepass X` is the default
 * user's one password, as in Redis. Not kept (and refused as unknown modifiers): pub/sub
 * channel rules beyond `resetchannels`/`allchannels`, selectors, `%R~`/`%W~` read/write key
 * patterns. Permissions apply at once to connections already authenticated as the user.
 *
 * Commands and their categories come from the node's own table (Redis's COMMAND INFO
 * categories), given as `AclCommand`s; key patterns are matched by an injected glob matcher
 * (the one KEYS and SCAN MATCH use).
 *
 * @example
 * const users = new AclUsers(commands, globMatch);
 * users.setUser("bob", ["on", ">s3cret", "~cache:*", "+@read"]);     // undefined: applied
 * users.authenticate("bob", "s3cret");                              // the user
 * users.denial(users.get("bob")!, getSpec, "get", ["cache:1"]);     // undefined: allowed
 */
import { createHash, timingSafeEqual } from "node:crypto";

/** What ACL rules need to know of a command: its name, categories and subcommands. */
export interface AclCommand {
  readonly name: string;
  readonly acl: readonly string[];
  readonly subcommands?: readonly AclCommand[];
}

export interface AclUser {
  readonly name: string;
  enabled: boolean;
  /** nopass: any password authenticates. */
  noPass: boolean;
  /** Lowercase hex SHA-256 of each password. */
  readonly passwords: Set<string>;
  allKeys: boolean;
  readonly keyPatterns: string[];
  allChannels: boolean;
  /** Full names (`get`, `config|get`) this user may run. */
  readonly allowed: Set<string>;
  /** The command rules as ACL LIST shows them, starting with `+@all` or `-@all`. */
  commandRules: string[];
  /** Every command and every key: the per-command check is skipped (the hot path). */
  unrestricted: boolean;
  /** Set by ACL DELUSER: connections still holding the user must authenticate again. */
  deleted: boolean;
}

export type Denial = { readonly kind: "command"; readonly name: string } | { readonly kind: "key" };

/** Bound on users (Redis has none; a limit keeps ACL SETUSER from growing the node without end). */
export const MAX_ACL_USERS = 10_000;

export function sha256Hex(password: string): string {
  return createHash("sha256").update(password, "latin1").digest("hex");
}

function newUser(name: string): AclUser {
  return {
    name,
    enabled: false,
    noPass: false,
    passwords: new Set(),
    allKeys: false,
    keyPatterns: [],
    allChannels: false,
    allowed: new Set(),
    commandRules: ["-@all"],
    unrestricted: false,
    deleted: false,
  };
}

export class AclUsers {
  readonly #users = new Map<string, AclUser>();
  readonly #commands: readonly AclCommand[];
  readonly #categories: Map<string, string[]>;
  readonly #names: Set<string>;
  readonly #match: (pattern: string, key: string) => boolean;

  constructor(commands: readonly AclCommand[], match: (pattern: string, key: string) => boolean) {
    this.#commands = commands;
    this.#match = match;
    this.#categories = new Map();
    this.#names = new Set();
    for (const command of commands) {
      for (const spec of [command, ...(command.subcommands ?? [])]) {
        this.#names.add(spec.name);
        for (const category of spec.acl) {
          const key = category.slice(1).toLowerCase();
          const list = this.#categories.get(key) ?? [];
          list.push(spec.name);
          this.#categories.set(key, list);
        }
      }
    }
    const byDefault = newUser("default");
    this.#users.set("default", byDefault);
    this.setUser("default", ["reset", "on", "nopass", "allkeys", "allchannels", "allcommands"]);
  }

  get default(): AclUser {
    return this.#users.get("default")!;
  }

  get(name: string): AclUser | undefined {
    return this.#users.get(name);
  }

  /** Names in order (ACL USERS sorts them, as Redis's radix tree does). */
  names(): string[] {
    return [...this.#users.keys()].sort();
  }

  /** The ACL categories known (ACL CAT). */
  categories(): string[] {
    return [...this.#categories.keys()];
  }

  /** The commands in a category (ACL CAT name), or undefined for an unknown one. */
  commandsIn(category: string): string[] | undefined {
    return this.#categories.get(category);
  }

  /**
   * True while the default user is on and nopass: connections need no AUTH. Kept as a field,
   * not computed, because every command of an unauthenticated connection reads it.
   */
  defaultOpen = true;

  /**
   * ACL SETUSER: applies `rules` in order to a copy of the user (created off, with no
   * rights, when new); on an error nothing changes and the bad rule is returned.
   */
  setUser(name: string, rules: readonly string[]): { rule: string; reason: string } | undefined {
    const existing = this.#users.get(name);
    if (existing === undefined && this.#users.size >= MAX_ACL_USERS) {
      return { rule: name, reason: `Too many users (at most ${MAX_ACL_USERS})` };
    }
    const draft = existing === undefined ? newUser(name) : cloneUser(existing);
    for (const rule of rules) {
      const reason = this.#apply(draft, rule);
      if (reason !== undefined) return { rule, reason };
    }
    draft.unrestricted =
      draft.allKeys && draft.commandRules.length === 1 && draft.commandRules[0] === "+@all";
    if (existing === undefined) this.#users.set(name, draft);
    else Object.assign(existing, draft); // in place: connections holding the user see the change now
    const byDefault = this.default;
    this.defaultOpen = byDefault.enabled && byDefault.noPass;
    return undefined;
  }

  /** ACL DELUSER; the default user cannot be deleted. Returns how many were. */
  deleteUsers(names: readonly string[]): number {
    let deleted = 0;
    for (const name of names) {
      const user = this.#users.get(name);
      if (user === undefined || name === "default") continue;
      user.deleted = true;
      user.unrestricted = false;
      this.#users.delete(name);
      deleted += 1;
    }
    return deleted;
  }

  /** The user when `password` is one of its own (or it is nopass) and it is on; undefined otherwise. */
  authenticate(name: string, password: string): AclUser | undefined {
    const user = this.#users.get(name);
    if (user === undefined || !user.enabled) return undefined;
    if (user.noPass) return user;
    const offered = Buffer.from(sha256Hex(password), "latin1");
    let ok = false;
    // Compare with every hash in constant time, so timing says nothing of which one was close.
    for (const hash of user.passwords) ok = timingSafeEqual(offered, Buffer.from(hash, "latin1")) || ok;
    return ok ? user : undefined;
  }

  /** True when no password is required, or the pair authenticates (a replica's PSYNC). */
  allows(name: string, password: string): boolean {
    return this.defaultOpen || this.authenticate(name, password) !== undefined;
  }

  /** Why `user` may not run this command on these keys, or undefined when it may. */
  denial(user: AclUser, fullName: string, keys: readonly string[]): Denial | undefined {
    if (!user.allowed.has(fullName)) return { kind: "command", name: fullName };
    if (user.allKeys) return undefined;
    for (const key of keys) {
      if (!user.keyPatterns.some((pattern) => this.#match(pattern, key))) return { kind: "key" };
    }
    return undefined;
  }

  /** The ACL LIST line of a user, in Redis's order. */
  describe(user: AclUser): string {
    const parts = [`user ${user.name}`, user.enabled ? "on" : "off"];
    if (user.noPass) parts.push("nopass");
    for (const hash of user.passwords) parts.push(`#${hash}`);
    if (user.allKeys) parts.push("~*");
    else for (const pattern of user.keyPatterns) parts.push(`~${pattern}`);
    parts.push(user.allChannels ? "&*" : "resetchannels");
    parts.push(...user.commandRules);
    return parts.join(" ");
  }

  #apply(user: AclUser, rule: string): string | undefined {
    const lower = rule.toLowerCase();
    if (lower === "on") user.enabled = true;
    else if (lower === "off") user.enabled = false;
    else if (lower === "nopass") {
      user.noPass = true;
      user.passwords.clear();
    } else if (lower === "resetpass") {
      user.noPass = false;
      user.passwords.clear();
    } else if (rule.startsWith(">")) {
      user.passwords.add(sha256Hex(rule.slice(1)));
      user.noPass = false;
    } else if (rule.startsWith("<")) user.passwords.delete(sha256Hex(rule.slice(1)));
    else if (rule.startsWith("#")) {
      if (!/^#[0-9a-fA-F]{64}$/.test(rule))
        return "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";
      user.passwords.add(rule.slice(1).toLowerCase());
      user.noPass = false;
    } else if (lower === "allkeys" || rule === "~*") {
      user.allKeys = true;
      user.keyPatterns.length = 0;
    } else if (lower === "resetkeys") {
      user.allKeys = false;
      user.keyPatterns.length = 0;
    } else if (rule.startsWith("~")) {
      if (user.allKeys)
        return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
      if (!user.keyPatterns.includes(rule.slice(1))) user.keyPatterns.push(rule.slice(1));
    } else if (lower === "allchannels" || rule === "&*") user.allChannels = true;
    else if (lower === "resetchannels") user.allChannels = false;
    else if (lower === "allcommands" || lower === "+@all") this.#setAll(user, true);
    else if (lower === "nocommands" || lower === "-@all") this.#setAll(user, false);
    else if (lower === "reset") {
      Object.assign(user, {
        ...newUser(user.name),
        passwords: user.passwords,
        keyPatterns: user.keyPatterns,
        allowed: user.allowed,
      });
      user.passwords.clear();
      user.keyPatterns.length = 0;
      user.allowed.clear();
    } else if (rule.startsWith("+") || rule.startsWith("-")) return this.#applyCommandRule(user, lower);
    else return "Syntax error";
    return undefined;
  }

  #setAll(user: AclUser, allow: boolean): void {
    user.allowed.clear();
    if (allow) for (const name of this.#names) user.allowed.add(name);
    user.commandRules = [allow ? "+@all" : "-@all"];
  }

  #applyCommandRule(user: AclUser, rule: string): string | undefined {
    const allow = rule[0] === "+";
    const target = rule.slice(1);
    let names: string[];
    if (target.startsWith("@")) {
      const inCategory = this.#categories.get(target.slice(1));
      if (inCategory === undefined) return "Unknown command or category name in ACL";
      names = inCategory;
    } else {
      const command = this.#commands.find((c) => c.name === target.split("|")[0]);
      if (command === undefined || !this.#names.has(target)) return "Unknown command or category name in ACL";
      // A whole command includes its subcommands; `cmd|sub` names one.
      names = target.includes("|")
        ? [target]
        : [command.name, ...(command.subcommands ?? []).map((s) => s.name)];
    }
    for (const name of names) {
      if (allow) user.allowed.add(name);
      else user.allowed.delete(name);
    }
    // The same rule given again replaces its earlier place, as Redis compacts its rule list.
    user.commandRules = user.commandRules.filter((r, i) => i === 0 || r.slice(1) !== target);
    user.commandRules.push(rule);
    return undefined;
  }
}

function cloneUser(user: AclUser): AclUser {
  return {
    ...user,
    passwords: new Set(user.passwords),
    keyPatterns: [...user.keyPatterns],
    allowed: new Set(user.allowed),
    commandRules: [...user.commandRules],
  };
}
