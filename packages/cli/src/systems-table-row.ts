/**
 * The new system's row in the root README's systems table: `casebook new` turns
 * `| \`flash-sale\` | ticket flash sale | planned |` into a link to the system's README with
 * status "in progress", the way the working systems' rows read. Only a row in exactly that
 * planned form is touched; anything else (no README, no row, a row someone already edited)
 * is left alone and the next steps say to add it by hand.
 *
 * @example
 * markInProgress("| `flash-sale` | ticket flash sale | planned |\n", "flash-sale");
 * // "| [`flash-sale`](systems/flash-sale/README.md) | ticket flash sale | in progress |\n"
 */

/** The README text with the row marked, or undefined when there is no planned row for `name`. */
export function markInProgress(readme: string, name: string): string | undefined {
  const planned = new RegExp(`^\\| \`${name}\` \\| ([^|\\n]+?) \\| planned \\|$`, "m");
  if (!planned.test(readme)) return undefined;
  return readme.replace(planned, `| [\`${name}\`](systems/${name}/README.md) | $1 | in progress |`);
}
