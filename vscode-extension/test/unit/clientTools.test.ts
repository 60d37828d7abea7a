// The tools the editor serves: their answers from an editor view, the wait for the editor to
// react, and the declarations and answers against the real daemon (over vscode-jsonrpc).

import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';

import * as rpc from 'vscode-jsonrpc/node';

import {
  callClientTool,
  CLIENT_TOOLS,
  diagnosticsText,
  settle,
  type EditorView,
  type OpenEditor,
  type Problem,
} from '../../src/host/clientTools';
import type { CallClientToolParams, RunResult, ServerCapability } from '../../src/protocol';
import { startTestDaemon, stopTestDaemon } from './daemonForTests';

const scratch = mkdtempSync(join(tmpdir(), 'cleveragents-client-tools-'));
const workspace = join(scratch, 'workspace');
mkdirSync(workspace);
writeFileSync(join(workspace, 'bad.json'), '{"a": 1,,}\n');

const PROBLEM: Problem = {
  path: join(workspace, 'bad.json'),
  severity: 'error',
  line: 1,
  column: 10,
  endLine: 1,
  endColumn: 11,
  source: 'json',
  code: '516',
  message: 'Value expected',
};

/** An editor that knows one problem and one open file; keeps what it was asked. */
class FakeEditor implements EditorView {
  readonly asked: (string | null)[] = [];
  resolve(given: string): string | null {
    return given === 'bad.json' || given === PROBLEM.path ? PROBLEM.path : null;
  }
  async problems(file: string | null): Promise<Problem[]> {
    this.asked.push(file);
    return [PROBLEM];
  }
  openEditors(): OpenEditor[] {
    return [{ path: PROBLEM.path, active: true, dirty: false, languageId: 'json' }];
  }
  display(file: string): string {
    return relative(workspace, file);
  }
}

const notCancelled = { isCancellationRequested: false };

function params(name: string, args: Record<string, unknown>): CallClientToolParams {
  return { runId: 'r1', callId: 'c1', name, arguments: args, iteration: 1 };
}

describe('client tools, answered from an editor view', () => {
  it("get_diagnostics gives the file's problems with paths relative to the run's folder", async () => {
    const editor = new FakeEditor();
    const result = await callClientTool(params('get_diagnostics', { path: 'bad.json' }), editor, notCancelled);
    assert.equal(result.isError, undefined);
    assert.deepEqual(editor.asked, [PROBLEM.path]);
    const answer = JSON.parse(result.content[0]?.text ?? '') as { scope: string; errors: number; problems: Problem[] };
    assert.equal(answer.scope, 'bad.json');
    assert.equal(answer.errors, 1);
    assert.deepEqual(answer.problems, [{ ...PROBLEM, path: 'bad.json' }]);
  });

  it('get_diagnostics without a path asks for every file', async () => {
    const editor = new FakeEditor();
    const result = await callClientTool(params('get_diagnostics', {}), editor, notCancelled);
    assert.deepEqual(editor.asked, [null]);
    assert.match(result.content[0]?.text ?? '', /"scope": "workspace"/);
  });

  it('refuses what it cannot answer with an error the model reads', async () => {
    const editor = new FakeEditor();
    const missing = await callClientTool(params('get_diagnostics', { path: '../etc/passwd' }), editor, notCancelled);
    assert.deepEqual([missing.isError, missing.content[0]?.text], [true, '../etc/passwd: no such file in the workspace']);
    const wrong = await callClientTool(params('get_diagnostics', { path: 3 }), editor, notCancelled);
    assert.deepEqual([wrong.isError, wrong.content[0]?.text], [true, '`path` must be a string']);
    const unknown = await callClientTool(params('format_file', {}), editor, notCancelled);
    assert.deepEqual([unknown.isError, unknown.content[0]?.text], [true, 'this editor serves no tool named "format_file"']);
    assert.deepEqual(editor.asked, []);
  });

  it('get_open_editors lists the open files', async () => {
    const result = await callClientTool(params('get_open_editors', {}), new FakeEditor(), notCancelled);
    assert.deepEqual(JSON.parse(result.content[0]?.text ?? ''), {
      editors: [{ path: 'bad.json', active: true, dirty: false, languageId: 'json' }],
    });
  });

  it('sorts problems by file, line and column, and counts errors and warnings', () => {
    const at = (path: string, line: number, column: number, severity: Problem['severity']): Problem => ({
      ...PROBLEM,
      path,
      line,
      column,
      severity,
    });
    const text = diagnosticsText([at('b.ts', 1, 1, 'error'), at('a.ts', 9, 2, 'warning'), at('a.ts', 9, 1, 'hint')], null);
    const answer = JSON.parse(text) as { errors: number; warnings: number; problems: Problem[] };
    assert.deepEqual(
      answer.problems.map((p) => [p.path, p.line, p.column]),
      [
        ['a.ts', 9, 1],
        ['a.ts', 9, 2],
        ['b.ts', 1, 1],
      ],
    );
    assert.deepEqual([answer.errors, answer.warnings], [1, 1]);
  });
});

/** A change source the test fires by hand; counts its listeners. */
class Changes {
  listeners = new Set<() => void>();
  subscribe = (listener: () => void): { dispose(): void } => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };
  fire(): void {
    for (const listener of this.listeners) listener();
  }
}

describe('waiting for the editor to react', () => {
  it('waits for the reports to stop coming, then lets go of its listener', async () => {
    const changes = new Changes();
    const order: string[] = [];
    const waiting = settle(changes.subscribe, { firstMs: 60_000, quietMs: 150, maxMs: 60_000 }, () => false).then(() =>
      order.push('settled'),
    );
    for (let i = 0; i < 4; i += 1) {
      changes.fire();
      order.push('change');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await waiting;
    assert.deepEqual(order, ['change', 'change', 'change', 'change', 'settled']);
    assert.equal(changes.listeners.size, 0);
  });

  it('returns when no report comes at all, and when the call is withdrawn', async () => {
    const quiet = new Changes();
    await settle(quiet.subscribe, { firstMs: 20, quietMs: 60_000, maxMs: 60_000 }, () => false);
    assert.equal(quiet.listeners.size, 0);
    const withdrawn = new Changes();
    let cancelled = false;
    setTimeout(() => {
      cancelled = true;
    }, 20);
    await settle(withdrawn.subscribe, { firstMs: 60_000, quietMs: 60_000, maxMs: 60_000 }, () => cancelled);
    assert.equal(withdrawn.listeners.size, 0);
  });
});

describe('the declared tools against the real daemon', () => {
  let child: ChildProcess;
  let connection: rpc.MessageConnection;
  let capability: ServerCapability | undefined;
  const editor = new FakeEditor();

  before(async () => {
    writeFileSync(
      join(workspace, 'script.json'),
      JSON.stringify({
        responses: [
          {
            text: 'Checking.',
            tool_calls: [
              { id: 'c_diag', name: 'get_diagnostics', arguments: { path: 'bad.json' } },
              { id: 'c_open', name: 'get_open_editors', arguments: {} },
            ],
          },
          { text: 'One error.' },
        ],
      }),
    );
    ({ child, connection } = await startTestDaemon(workspace, join(scratch, 'history.sqlite3')));
    connection.onRequest('cleveragents/callClientTool', (p: CallClientToolParams, token: rpc.CancellationToken) =>
      callClientTool(p, editor, token),
    );
    connection.listen();
    const result = (await connection.sendRequest('initialize', {
      processId: process.pid,
      rootUri: null,
      // As the extension declares them (daemonClient.ts), beside the daemon's built-in tools.
      capabilities: { experimental: { cleveragents: { approvals: false, tools: CLIENT_TOOLS } } },
      initializationOptions: { provider: 'replay', replayScript: 'script.json', automationProfile: 'read-only' },
    })) as { capabilities: { experimental?: { cleveragents?: ServerCapability } } };
    capability = result.capabilities.experimental?.cleveragents;
    await connection.sendNotification('initialized', {});
  });

  after(async () => {
    await stopTestDaemon({ child, connection });
    rmSync(scratch, { recursive: true, force: true });
  });

  it('accepts the declarations and the model reads the answers, even under read-only', async () => {
    assert.deepEqual(capability?.clientTools, ['get_diagnostics', 'get_open_editors']);
    const result = (await connection.sendRequest('cleveragents/run', {
      prompt: 'Check bad.json',
      sandboxRoot: workspace,
    })) as RunResult;
    assert.equal(result.stopReason, 'final_answer');
    const [diag, open] = result.toolCallHistory;
    assert.equal(diag?.success, true, diag?.error ?? '');
    assert.match(String(diag?.output['text']), /"message": "Value expected"/);
    assert.match(String(open?.output['text']), /"path": "bad.json"/);
  });
});
