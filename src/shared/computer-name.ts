/**
 * Names of shared computers (`paddock mcp --computer NAME`, the `Paddock-Computer` header):
 * lower-case letters, digits and inner dashes, 1 to 63 characters, like a DNS label, so a name
 * is safe in paths, URLs, cgroup and log names alike.
 */
export const COMPUTER_NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Why `name` is not a valid computer name, or null when it is. */
export function computerNameProblem(name: string): string | null {
  if (COMPUTER_NAME_PATTERN.test(name)) return null;
  const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
  return `${shown} is not a valid computer name: use 1 to 63 lower-case letters, digits and dashes, starting and ending with a letter or digit (e.g. "review-box").`;
}
