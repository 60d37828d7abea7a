// Which paths the panel may open: only files inside an open workspace folder. Paths come from
// model text and tool records, so they are untrusted: `..`, absolute paths elsewhere and
// symbolic links that leave the folder are all refused. Pure (node:path and node:fs only).

import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The absolute path `candidate` names, when it is inside one of `folders` (after resolving
 * symbolic links of what exists); null otherwise. Relative paths are taken against `base`
 * (the run's folder) when it is one of the folders, else against each folder in turn.
 */
export function resolveWorkspacePath(
  candidate: string,
  base: string | null,
  folders: readonly string[],
): string | null {
  const text = candidate.trim().replace(/^file:\/\//, '');
  if (text === '' || text.includes('\0') || folders.length === 0) return null;
  const roots = folders.map((folder) => realOrSelf(folder));
  const bases = path.isAbsolute(text)
    ? ['']
    : [...(base !== null && folders.some((folder) => isInside(base, folder)) ? [base] : []), ...folders];
  for (const from of bases) {
    const absolute = path.resolve(from, text);
    const real = realOrSelf(absolute);
    if (roots.some((root) => isInside(real, root)) && fs.existsSync(real)) return real;
  }
  return null;
}

/** True when `child` is `parent` or below it. */
export function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function realOrSelf(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}
