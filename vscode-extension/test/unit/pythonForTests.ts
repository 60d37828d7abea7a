// Which Python the tests that start the real daemon use: $CLEVERAGENTS_TEST_PYTHON, else the
// repository's virtualenv.

import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// Tests run from out/test/unit: the repository is four levels up.
export const EXTENSION_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const REPO_ROOT = resolve(EXTENSION_ROOT, '..');

export function repoPython(): string {
  const configured = process.env.CLEVERAGENTS_TEST_PYTHON;
  if (configured) return configured;
  const venv = join(REPO_ROOT, '.venv', 'bin', 'python');
  if (!existsSync(venv)) {
    throw new Error(`no Python for the daemon tests: create ${venv} or set CLEVERAGENTS_TEST_PYTHON`);
  }
  return venv;
}
