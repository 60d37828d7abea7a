// Bundles the extension (Node, CommonJS, `vscode` external) and the webview script (browser,
// IIFE) with esbuild; with --tests, also the unit and webview tests into out/test.
//
//   node scripts/build.mjs [--production] [--tests] [--watch]
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const args = new Set(process.argv.slice(2));
const production = args.has('--production');
const tests = args.has('--tests');
const watch = args.has('--watch');

/** @type {import('esbuild').BuildOptions[]} */
const builds = [
  {
    entryPoints: [join(root, 'src', 'extension.ts')],
    outfile: join(root, 'dist', 'extension.js'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    external: ['vscode'],
    sourcemap: production ? false : 'linked',
    minify: production,
    // languageclient is bundled: the .vsix ships no node_modules.
    mainFields: ['module', 'main'],
  },
  {
    entryPoints: [join(root, 'src', 'webview', 'main.ts')],
    outfile: join(root, 'dist', 'webview.js'),
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'chrome114',
    sourcemap: production ? false : 'linked',
    minify: production,
  },
];

function testEntries(folder) {
  const dir = join(root, 'test', folder);
  return readdirSync(dir)
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => join(dir, name));
}

if (tests) {
  for (const folder of ['unit', 'webview']) {
    builds.push({
      entryPoints: testEntries(folder),
      outdir: join(root, 'out', 'test', folder),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      sourcemap: 'inline',
      // Real packages stay imports; our code is bundled in so tests run what ships.
      packages: 'external',
      outExtension: { '.js': '.mjs' },
    });
  }
}

const started = Date.now();
if (watch) {
  for (const options of builds) {
    const context = await esbuild.context({ ...options, logLevel: 'info' });
    await context.watch();
  }
} else {
  await Promise.all(builds.map((options) => esbuild.build({ ...options, logLevel: 'warning' })));
  console.log(
    `built ${builds.length} bundle(s)${production ? ' (production)' : ''} in ${Date.now() - started} ms`,
  );
}
