// The panel's new pure logic: proposed file contents, run options over settings, changed
// files and usage in the run state, workspace paths, formatting.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { proposeChange } from '../../src/host/fileChanges';
import { applyRunOptions, cleanRunOptions } from '../../src/host/runOptions';
import { readSettings } from '../../src/host/settings';
import { resolveWorkspacePath } from '../../src/host/workspacePaths';
import type { RunResult, ToolCallRecord } from '../../src/protocol';
import { mergeChangedFiles, RunState, type RunNotification } from '../../src/shared/runState';
import { formatUsage } from '../../src/webview/format';

describe('proposed file contents', () => {
  it('write_file proposes its content; edit_file replaces exactly as the daemon does', () => {
    assert.deepEqual(proposeChange('write_file', { path: 'a.txt', content: 'new' }, 'old'), { ok: true, path: 'a.txt', content: 'new' });
    assert.deepEqual(proposeChange('edit_file', { path: 'a.txt', old_text: 'b', new_text: '$&x' }, 'abc'), {
      ok: true,
      path: 'a.txt',
      content: 'a$&xc',
    });
    assert.deepEqual(proposeChange('edit_file', { path: 'a', old_text: 'x', new_text: 'y', replace_all: true }, 'x-x-x'), {
      ok: true,
      path: 'a',
      content: 'y-y-y',
    });
    const ambiguous = proposeChange('edit_file', { path: 'a', old_text: 'x', new_text: 'y' }, 'x-x');
    assert.equal(ambiguous.ok, false);
    assert.match(ambiguous.ok ? '' : ambiguous.reason, /occurs 2 times/);
    assert.equal(proposeChange('edit_file', { path: 'a', old_text: 'q', new_text: 'y' }, 'x').ok, false);
    assert.equal(proposeChange('edit_file', { path: 'a', old_text: 'q', new_text: 'y' }, null).ok, false);
    assert.equal(proposeChange('write_file', { content: 'x' }, null).ok, false);
    assert.equal(proposeChange('run_command', { path: 'a' }, null).ok, false);
  });
});

describe('run options', () => {
  const settings = readSettings({ get: <T>(key: string) => ({ provider: 'anthropic', model: 'claude-x', automationProfile: 'ask' })[key] as T });
  it('lays the panel picks over the settings and drops invalid ones', () => {
    assert.deepEqual(cleanRunOptions({ provider: 'nope', model: 3, automationProfile: 'full-auto' }), { automationProfile: 'full-auto' });
    const picked = applyRunOptions(settings, { provider: 'openai' });
    assert.equal(picked.provider, 'openai');
    assert.equal(picked.model, '', "another provider does not inherit the setting's model");
    assert.equal(applyRunOptions(settings, { automationProfile: 'read-only' }).model, 'claude-x');
    assert.equal(applyRunOptions(settings, {}).provider, 'anthropic');
  });
});

function notify(state: RunState, method: string, params: object, seq: number): void {
  state.apply({ method, params: { ...params, runId: state.runId, seq } } as RunNotification);
}

const record = (callId: string, toolName: string, output: Record<string, unknown>, success = true): ToolCallRecord =>
  ({
    callId,
    toolName,
    iteration: 1,
    inputs: { path: 'ignored.txt' },
    output,
    success,
    error: success ? null : 'denied',
    errorKind: success ? null : 'denied',
    durationMs: 1,
  }) as unknown as ToolCallRecord;

describe('run state: changed files and usage', () => {
  it('lists the files a run wrote or edited, merged with the daemon list, and keeps the usage', () => {
    const state = new RunState('r1', { phase: 'running' });
    notify(state, 'cleveragents/toolCall', { record: record('c1', 'write_file', { path: 'new.txt', created: true }) }, 1);
    notify(state, 'cleveragents/toolCall', { record: record('c2', 'edit_file', { path: 'src/a.py' }) }, 2);
    notify(state, 'cleveragents/toolCall', { record: record('c3', 'edit_file', { path: 'denied.py' }, false) }, 3);
    notify(state, 'cleveragents/toolCall', { record: record('c4', 'write_file', { path: 'new.txt', created: false }) }, 4);
    const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.5 };
    notify(state, 'cleveragents/usage', { iteration: 1, usage, total: usage }, 5);
    assert.equal(state.header.usage?.costUsd, 0.5);
    state.settle({
      runId: 'r1',
      content: 'done',
      stopReason: 'final_answer',
      iterations: 1,
      terminatedByLimit: false,
      usage: { inputTokens: 10, outputTokens: 5 } as RunResult['usage'],
      toolCallHistory: [],
      continuedFrom: null,
      changedFiles: [{ path: 'gone.txt', change: 'deleted' }, { path: './src/a.py', change: 'modified' }],
      checkpointWarning: null,
      checkpoints: [],
    });
    assert.deepEqual(state.end?.changedFiles, [
      { path: 'new.txt', change: 'added' },
      { path: 'src/a.py', change: 'modified' },
      { path: 'gone.txt', change: 'deleted' },
    ]);
    assert.equal(state.header.usage?.costUsd, 0.5, 'a result without a cost keeps the streamed one');
    assert.deepEqual(mergeChangedFiles([{ path: 'a', change: 'modified' }], [{ path: 'a', change: 'deleted' }]), [{ path: 'a', change: 'deleted' }]);
  });

  it('formats usage, with "—" for what is unknown', () => {
    assert.deepEqual(formatUsage(null), { tokens: '—', cost: '—' });
    assert.deepEqual(formatUsage({ inputTokens: 0, outputTokens: 0 }), { tokens: '—', cost: '—' });
    assert.deepEqual(formatUsage({ inputTokens: 1234, outputTokens: 5, costUsd: null }), { tokens: '1,234 in · 5 out', cost: '—' });
    assert.deepEqual(formatUsage({ inputTokens: 1, outputTokens: 1, cacheReadTokens: 7, costUsd: 0.004 }), {
      tokens: '1 in · 1 out (7 cached)',
      cost: '$0.0040',
    });
    assert.equal(formatUsage({ inputTokens: 1, outputTokens: 1, costUsd: 1.234 }).cost, '$1.23');
  });
});

describe('workspace paths', () => {
  it('opens only files inside a workspace folder, symbolic links included', () => {
    const root = mkdtempSync(join(tmpdir(), 'panel-paths-'));
    const folder = join(root, 'ws');
    const outside = join(root, 'secret.txt');
    mkdirSync(join(folder, 'src'), { recursive: true });
    writeFileSync(join(folder, 'src', 'a.ts'), 'x');
    writeFileSync(outside, 's');
    symlinkSync(outside, join(folder, 'link.txt'));
    assert.equal(resolveWorkspacePath('src/a.ts', folder, [folder]), join(folder, 'src', 'a.ts'));
    assert.equal(resolveWorkspacePath(join(folder, 'src', 'a.ts'), null, [folder]), join(folder, 'src', 'a.ts'));
    assert.equal(resolveWorkspacePath('../secret.txt', folder, [folder]), null);
    assert.equal(resolveWorkspacePath(outside, folder, [folder]), null);
    assert.equal(resolveWorkspacePath('link.txt', folder, [folder]), null);
    assert.equal(resolveWorkspacePath('missing.ts', folder, [folder]), null);
    assert.equal(resolveWorkspacePath('src/a.ts', null, []), null);
  });
});
