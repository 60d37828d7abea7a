import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { chooseSandbox, NO_FOLDER_MESSAGE } from '../../src/host/sandbox';
import { initializationOptions, newRunId, readSettings, runParams } from '../../src/host/settings';
import { EXTENSION_ROOT } from './pythonForTests';

function config(values: Record<string, unknown>): { get<T>(key: string): T | undefined } {
  return { get: <T>(key: string) => values[key] as T | undefined };
}

describe('settings', () => {
  it("cannot be set by a workspace where they would send prompts and keys elsewhere or raise the profile", () => {
    const manifest = JSON.parse(readFileSync(join(EXTENSION_ROOT, 'package.json'), 'utf8')) as {
      contributes: { configuration: { properties: Record<string, { scope?: string }> } };
    };
    const scopes = Object.fromEntries(
      Object.entries(manifest.contributes.configuration.properties).map(([key, value]) => [key, value.scope ?? 'window']),
    );
    for (const key of ['baseUrl', 'replayScript', 'automationProfile', 'historyPath']) {
      assert.equal(scopes[`cleveragents.${key}`], 'machine', `cleveragents.${key} must be user settings only`);
    }
  });

  it('falls back to the documented defaults for missing or invalid values', () => {
    assert.deepEqual(readSettings(config({})), {
      pythonPath: '',
      provider: 'offline',
      model: '',
      baseUrl: '',
      replayScript: '',
      maxIterations: 25,
      automationProfile: 'ask',
      historyPath: '',
    });
    const odd = readSettings(
      config({ provider: 'gpt', automationProfile: 'yolo', maxIterations: 0, model: 42, pythonPath: ' /opt/py ' }),
    );
    assert.equal(odd.provider, 'offline');
    assert.equal(odd.automationProfile, 'ask');
    assert.equal(odd.maxIterations, 25);
    assert.equal(odd.model, '');
    assert.equal(odd.pythonPath, '/opt/py');
    assert.equal(readSettings(config({ maxIterations: 2.5 })).maxIterations, 25);
  });

  it('turns settings into run params, resolving a relative replay script in the sandbox', () => {
    const settings = readSettings(
      config({ provider: 'replay', replayScript: 'demo/script.json', model: 'm', maxIterations: 3, automationProfile: 'full-auto' }),
    );
    const params = runParams(settings, { prompt: 'p', sandboxRoot: '/work/ws', runId: 'r1', continueFrom: 'r0' });
    assert.deepEqual(params, {
      prompt: 'p',
      sandboxRoot: '/work/ws',
      runId: 'r1',
      provider: 'replay',
      maxIterations: 3,
      automationProfile: 'full-auto',
      continueFrom: 'r0',
      model: 'm',
      replayScript: '/work/ws/demo/script.json',
    });
    const absolute = runParams(readSettings(config({ replayScript: '/scripts/a.json' })), {
      prompt: 'p',
      sandboxRoot: '/ws',
      runId: 'r',
    });
    assert.equal(absolute.replayScript, '/scripts/a.json');
    assert.equal('model' in absolute, false, 'an empty model is left to the provider');
    assert.equal('continueFrom' in absolute, false);
  });

  it('declares approvals in the initialization options, and never a key', () => {
    const options = initializationOptions(readSettings(config({ provider: 'anthropic', baseUrl: 'http://x' })));
    assert.equal(options.approvals, true);
    assert.equal(options.provider, 'anthropic');
    assert.equal(options.baseUrl, 'http://x');
    assert.ok(!JSON.stringify(options).toLowerCase().includes('key'));
  });

  it('makes run ids the daemon accepts, unique and time-ordered', () => {
    const pattern = /^[A-Za-z0-9_.:-]{1,64}$/;
    const ids = new Set<string>();
    for (let i = 0; i < 200; i += 1) {
      const id = newRunId();
      assert.match(id, pattern);
      ids.add(id);
    }
    assert.equal(ids.size, 200);
    assert.ok(newRunId(1_000, () => 0) < newRunId(2_000, () => 0));
  });
});

describe('sandbox choice', () => {
  const folder = (name: string, fsPath: string, scheme = 'file') => ({ name, uri: { scheme, fsPath } });

  it('refuses clearly when no folder is open', () => {
    assert.deepEqual(chooseSandbox(undefined), { kind: 'none', message: NO_FOLDER_MESSAGE });
    assert.deepEqual(chooseSandbox([]), { kind: 'none', message: NO_FOLDER_MESSAGE });
    const remote = chooseSandbox([folder('r', '/r', 'vscode-vfs')]);
    assert.equal(remote.kind, 'none');
    assert.match(remote.kind === 'none' ? remote.message : '', /not local files/);
  });

  it('uses the only folder, asks among several, and prefers the continued run\'s', () => {
    const a = folder('a', '/ws/a');
    const b = folder('b', '/ws/b');
    assert.deepEqual(chooseSandbox([a]), { kind: 'folder', folder: a });
    assert.deepEqual(chooseSandbox([a, b]), { kind: 'pick', folders: [a, b] });
    assert.deepEqual(chooseSandbox([a, b], '/ws/b/'), { kind: 'folder', folder: b });
    assert.deepEqual(chooseSandbox([a, b], '/elsewhere'), { kind: 'pick', folders: [a, b] });
  });
});
