import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { renderProtocolTypes } from '../../scripts/protocol-types.mjs';
import { createNonce, renderWebviewHtml } from '../../src/host/webviewHtml';
import { clip, formatDuration, inputSummary, prettyJson, relativeTime, snapshotLine, stopReasonTitle } from '../../src/webview/format';
import { EXTENSION_ROOT, REPO_ROOT } from './pythonForTests';

describe('protocol types', () => {
  it('src/protocol.ts is what protocol/schema.json generates (run npm run generate:protocol)', () => {
    const schema = JSON.parse(readFileSync(join(REPO_ROOT, 'protocol', 'schema.json'), 'utf8')) as unknown;
    const generated = renderProtocolTypes(schema);
    const checkedIn = readFileSync(join(EXTENSION_ROOT, 'src', 'protocol.ts'), 'utf8');
    assert.equal(checkedIn, generated);
  });
});

describe('formatting', () => {
  it('formats durations for people', () => {
    assert.equal(formatDuration(0.2), '<1 ms');
    assert.equal(formatDuration(53.4), '53 ms');
    assert.equal(formatDuration(1234), '1.2 s');
    assert.equal(formatDuration(42_000), '42 s');
    assert.equal(formatDuration(125_000), '2 min 5 s');
    assert.equal(formatDuration(120_000), '2 min');
    assert.equal(formatDuration(Number.NaN), '');
  });

  it('pretty-prints JSON and cuts very long output with a note', () => {
    assert.equal(prettyJson({ a: [1, 2] }), '{\n  "a": [\n    1,\n    2\n  ]\n}');
    const long = prettyJson({ text: 'x'.repeat(500) }, 100);
    assert.ok(long.startsWith('{\n  "text": "xxx'));
    assert.match(long, /\n… 4\d\d more characters not shown$/);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    assert.equal(prettyJson(cyclic), '[object Object]');
  });

  it('summarises inputs by their telling field, hiding what the runtime adds', () => {
    assert.equal(inputSummary({ sandbox_root: '/ws', path: 'src/app.py', offset: 1 }), 'path: src/app.py');
    assert.equal(inputSummary({ command: 'ls   -la\n' }), 'command: ls -la');
    assert.equal(inputSummary({ sandbox_root: '/ws', flag: true }), 'flag: true');
    assert.equal(inputSummary({ sandbox_root: '/ws' }), '');
    assert.equal(inputSummary({ _raw: 'not json' }), '_raw: not json');
    assert.equal(inputSummary('oops'), '"oops"');
    assert.equal(inputSummary({ path: 'a'.repeat(200) }).length, 80);
  });

  it('names every way a run ends', () => {
    assert.equal(stopReasonTitle('final_answer', 25), 'Finished');
    assert.equal(stopReasonTitle('max_iterations', 25), 'Stopped at the iteration limit (25)');
    assert.equal(stopReasonTitle('context_exhausted', 25), "Stopped: the model's context window is full");
    assert.equal(stopReasonTitle('cancelled', null), 'Stopped');
  });

  it('says how long ago a run started', () => {
    const now = 1_700_000_000_000;
    assert.equal(relativeTime(now / 1000 - 10, now), 'just now');
    assert.equal(relativeTime(now / 1000 - 600, now), '10 min ago');
    assert.equal(relativeTime(now / 1000 - 3 * 3600, now), '3 h ago');
    assert.equal(relativeTime(now / 1000 - 30 * 3600, now), 'yesterday');
    assert.equal(relativeTime(now / 1000 - 30 * 86400, now), '2023-10-15');
    assert.equal(clip('abcdef', 4), 'abc…');
  });
});

describe('the webview page', () => {
  const page = renderWebviewHtml({
    cspSource: 'https://file+.vscode-resource.vscode-cdn.net',
    nonce: 'N0nce',
    scriptUri: 'https://x/dist/webview.js',
    styleUri: 'https://x/media/webview.css',
  });

  it('has a strict Content-Security-Policy with the nonce', () => {
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(page)?.[1] ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'nonce-N0nce'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    const scripts = page.match(/<script[^>]*>/g) ?? [];
    assert.deepEqual(scripts, ['<script nonce="N0nce" src="https://x/dist/webview.js">']);
    assert.doesNotMatch(page, /style="/, 'no inline styles');
  });

  it('carries every test hook of the contract', () => {
    for (const id of ['prompt', 'run', 'stop', 'new-conversation', 'status', 'thread', 'transcript', 'history']) {
      assert.match(page, new RegExp(`data-testid="${id}"`), id);
    }
  });

  it('makes a fresh, unguessable nonce each time', () => {
    const nonces = new Set(Array.from({ length: 50 }, () => createNonce()));
    assert.equal(nonces.size, 50);
    for (const nonce of nonces) assert.match(nonce, /^[A-Za-z0-9_-]{32}$/);
  });
});

describe('snapshotLine', () => {
  it('words a checkpoint being saved, saved and failed', () => {
    assert.equal(snapshotLine(null), '');
    assert.equal(
      snapshotLine({ iteration: 2, durationMs: 1500, files: null, error: null, saving: true }),
      'Saving a checkpoint before iteration 2… 1.5 s',
    );
    assert.equal(
      snapshotLine({ iteration: 2, durationMs: 85, files: 60000, error: null, saving: false }),
      'Checkpoint before iteration 2: 60,000 files, 85 ms',
    );
    assert.equal(
      snapshotLine({ iteration: 3, durationMs: 4, files: null, error: 'disk full', saving: false }),
      'Checkpoint before iteration 3 failed: disk full',
    );
  });
});
