// Builds the daemon's wheel from the repository's Python package into dist-wheel/, so the
// .vsix carries it (see src/daemon/privateEnvironment.ts). $PYTHON, else python3.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const repo = dirname(root);
const out = join(root, 'dist-wheel');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const python = process.env.PYTHON || 'python3';
const built = spawnSync(python, ['-m', 'pip', 'wheel', '--no-deps', '--disable-pip-version-check', '-q', repo, '-w', out], {
  stdio: 'inherit',
});
if (built.status !== 0) {
  console.error(`building the wheel with ${python} failed (exit ${built.status})`);
  process.exit(1);
}
const wheels = readdirSync(out).filter((name) => name.endsWith('.whl'));
if (wheels.length !== 1) {
  console.error(`expected one wheel in ${out}, found ${wheels.join(', ') || 'none'}`);
  process.exit(1);
}
console.log(`built dist-wheel/${wheels[0]}`);
