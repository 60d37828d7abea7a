// The real daemon for the unit tests that talk to it: started as the extension starts it
// (launch.ts), reached with vscode-jsonrpc in place of the language client (which needs VS Code).

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';

import * as rpc from 'vscode-jsonrpc/node';

import { daemonArguments, daemonEnvironment, probeInterpreter } from '../../src/daemon/launch';
import { repoPython } from './pythonForTests';

export interface TestDaemon {
  child: ChildProcess;
  /** Not listening yet: register handlers, then `listen()`. */
  connection: rpc.MessageConnection;
}

/** The daemon in `cwd` with its history at `historyPath`; its stderr is printed if it fails. */
export async function startTestDaemon(cwd: string, historyPath: string): Promise<TestDaemon> {
  const probe = await probeInterpreter(repoPython());
  assert.ok(probe.ok, probe.ok ? '' : probe.message);
  const child = spawn(probe.python, daemonArguments({ python: probe.python, module: probe.module, historyPath }), {
    cwd,
    env: daemonEnvironment(process.env, {}),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  child.on('exit', (code) => {
    if (code !== 0 && code !== null) console.error(`daemon exited ${code}: ${stderr}`);
  });
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(child.stdout as NodeJS.ReadableStream),
    new rpc.StreamMessageWriter(child.stdin as NodeJS.WritableStream),
  );
  return { child, connection };
}

/** `shutdown` and `exit` (or a kill when the daemon cannot answer). */
export async function stopTestDaemon({ child, connection }: TestDaemon): Promise<void> {
  try {
    await connection.sendRequest('shutdown');
    await connection.sendNotification('exit');
  } catch {
    child.kill();
  }
  connection.dispose();
}
