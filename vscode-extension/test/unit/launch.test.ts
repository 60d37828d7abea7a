import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

import {
  daemonArguments,
  daemonEnvironment,
  describeLaunch,
  interpretProbe,
  probeInterpreter,
} from '../../src/daemon/launch';
import { repoPython, REPO_ROOT } from './pythonForTests';

const scratch = mkdtempSync(join(tmpdir(), 'cleveragents-launch-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function script(name: string, body: string): string {
  const file = join(scratch, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe('probing the interpreter', () => {
  it('says Python is missing, with the fix, for a path that does not exist', async () => {
    const result = await probeInterpreter(join(scratch, 'no-such-python'));
    assert.equal(result.ok, false);
    assert.equal(result.ok ? '' : result.kind, 'python-missing');
    assert.match(result.ok ? '' : result.message, /Python was not found at .*no-such-python.*cleveragents\.pythonPath/);
  });

  it('says the package is missing, naming the interpreter and the pip command', async (t) => {
    if (!existsSync('/usr/bin/python3')) {
      t.skip('no /usr/bin/python3 here');
      return;
    }
    // -I -S: no site-packages, so cleveragents cannot be importable from it.
    const bare = script('bare-python', 'exec /usr/bin/python3 -I -S "$@"');
    const result = await probeInterpreter(bare);
    assert.equal(result.ok ? 'ok' : result.kind, 'package-missing');
    assert.match(
      result.ok ? '' : result.message,
      /^cleveragents is not installed for \/usr\/bin\/python3[\d.]*: run `\/usr\/bin\/python3[\d.]* -m pip install cleveragents` or set cleveragents\.pythonPath/,
    );
  });

  it('finds the package and the module to run in the project virtualenv', async () => {
    const python = repoPython();
    const result = await probeInterpreter(python);
    assert.equal(result.ok, true, result.ok ? '' : result.message);
    if (!result.ok) return;
    const daemonMain = existsSync(join(REPO_ROOT, 'server', 'cleveragents', 'daemon', '__main__.py'));
    const cliMain = existsSync(join(REPO_ROOT, 'server', 'cleveragents', '__main__.py'));
    assert.equal(result.module, daemonMain ? 'cleveragents.daemon' : cliMain ? 'cleveragents' : 'cleveragents.cli');
    assert.match(result.pythonVersion, /^3\.\d+\.\d+$/);
    assert.match(result.packageVersion, /^\d+\.\d+/);
  });

  it('reports a program that is not Python', async () => {
    const notPython = script('not-python', 'echo "this is not python" >&2; exit 3');
    const result = await probeInterpreter(notPython);
    assert.equal(result.ok ? 'ok' : result.kind, 'probe-failed');
    assert.match(result.ok ? '' : result.message, /could not be run as Python \(this is not python\)/);
  });

  it('reports an install that cannot be imported', () => {
    const stdout = JSON.stringify({
      python: '/usr/bin/python3.9',
      version: '3.9.2',
      installed: true,
      importError: "SyntaxError: invalid syntax (runtime.py, line 3)",
    });
    const result = interpretProbe('python3', stdout, '', null);
    assert.equal(result.ok ? 'ok' : result.kind, 'package-broken');
    assert.match(result.ok ? '' : result.message, /needs Python 3\.11 or later/);
  });
});

describe('the daemon command line and environment', () => {
  it('runs the daemon module, or the CLI with serve, with --history when set', () => {
    assert.deepEqual(daemonArguments({ python: 'p', module: 'cleveragents.daemon', historyPath: '/h.db' }), [
      '-m',
      'cleveragents.daemon',
      '--stdio',
      '--history',
      '/h.db',
    ]);
    assert.deepEqual(daemonArguments({ python: 'p', module: 'cleveragents', historyPath: '' }), [
      '-m',
      'cleveragents',
      'serve',
      '--stdio',
    ]);
    assert.deepEqual(daemonArguments({ python: 'p', module: 'cleveragents.cli', historyPath: '/h.db' }), [
      '-m',
      'cleveragents.cli',
      'serve',
      '--stdio',
      '--history',
      '/h.db',
    ]);
  });

  it('hands stored keys to the daemon by provider, over inherited ones', () => {
    const env = daemonEnvironment({ PATH: '/bin', OPENAI_API_KEY: 'inherited' }, { anthropic: 'sk-ant-secret', openai: 'sk-openai-secret' });
    assert.equal(env.ANTHROPIC_API_KEY, 'sk-ant-secret');
    assert.equal(env.OPENAI_API_KEY, 'sk-openai-secret');
    assert.equal(env.PATH, '/bin');
    const untouched = daemonEnvironment({ OPENAI_API_KEY: 'inherited' }, {});
    assert.equal(untouched.OPENAI_API_KEY, 'inherited');
    assert.equal('ANTHROPIC_API_KEY' in untouched, false);
  });

  it('logs which keys are set, never their values', () => {
    const line = describeLaunch(
      { python: '/opt/my python/bin/python', module: 'cleveragents', historyPath: '' },
      { anthropic: 'sk-ant-secret-value' },
    );
    assert.equal(line.includes('sk-ant-secret-value'), false);
    assert.match(line, /ANTHROPIC_API_KEY/);
    assert.match(line, /'\/opt\/my python\/bin\/python' -m cleveragents serve --stdio/);
  });
});
