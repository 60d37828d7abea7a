// The host side against the real daemon: the same launch, settings, params and run store the
// extension uses, with vscode-jsonrpc in place of the language client (which needs VS Code).

import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import * as rpc from 'vscode-jsonrpc/node';

import { RunStore } from '../../src/host/runStore';
import { initializationOptions, newRunId, readSettings, runParams, type Settings } from '../../src/host/settings';
import type {
  ApproveToolCallParams,
  ApproveToolCallResult,
  RunDetail,
  RunResult,
  RunsResult,
  ServerCapability,
} from '../../src/protocol';
import { RunState, undoInfoOf, type ApprovalDecision, type RunNotification } from '../../src/shared/runState';
import { startTestDaemon, stopTestDaemon } from './daemonForTests';

const scratch = mkdtempSync(join(tmpdir(), 'cleveragents-daemon-test-'));
const workspace = join(scratch, 'workspace');
mkdirSync(workspace);
writeFileSync(join(workspace, 'notes.txt'), 'TODO: one\nTODO: two\n');
writeFileSync(
  join(workspace, 'script.json'),
  JSON.stringify({
    responses: [
      {
        text: 'Reading, then writing.',
        tool_calls: [
          { id: 'c_read', name: 'read_file', arguments: { path: 'notes.txt' } },
          { id: 'c_write', name: 'write_file', arguments: { path: 'out.txt', content: 'two TODOs\n' } },
        ],
      },
      { text: 'Wrote out.txt.' },
    ],
  }),
);

let child: ChildProcess;
let connection: rpc.MessageConnection;
let capability: ServerCapability | undefined;
const store = new RunStore({ schedule: (flush) => queueMicrotask(flush) });
/** How the simulated user answers each approval, by tool name. */
const decisions = new Map<string, ApprovalDecision>();
const asked: ApproveToolCallParams[] = [];
let approvalCounter = 0;

const settings: Settings = readSettings({
  get: <T>(key: string) =>
    ({ provider: 'replay', replayScript: 'script.json', automationProfile: 'ask', maxIterations: 4 })[key] as T | undefined,
});

before(async () => {
  ({ child, connection } = await startTestDaemon(workspace, join(scratch, 'history.sqlite3')));
  connection.onNotification((method: string, params: unknown) => {
    if (method.startsWith('cleveragents/')) store.notify({ method, params } as RunNotification);
  });
  connection.onRequest('cleveragents/approveToolCall', async (params: ApproveToolCallParams): Promise<ApproveToolCallResult> => {
    asked.push(params);
    approvalCounter += 1;
    const requestId = `approval-${approvalCounter}`;
    const answer = store.requestApproval(requestId, params);
    // The user answers once the prompt is on screen (here: on the next turn).
    setImmediate(() => store.answerApproval(requestId, decisions.get(params.toolName) ?? 'deny'));
    const decision = await answer;
    return { decision: decision === 'withdrawn' ? 'deny' : decision };
  });
  connection.listen();
  const result = (await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: null,
    capabilities: {},
    initializationOptions: initializationOptions(settings),
  })) as { capabilities: { experimental?: { cleveragents?: ServerCapability } } };
  capability = result.capabilities.experimental?.cleveragents;
  await connection.sendNotification('initialized', {});
});

after(async () => {
  await stopTestDaemon({ child, connection });
  rmSync(scratch, { recursive: true, force: true });
});

async function run(prompt: string, continueFrom: string | null = null): Promise<{ runId: string; result: RunResult }> {
  const runId = newRunId();
  store.beginRun(runId, { prompt, sandboxRoot: workspace, continuedFrom: continueFrom });
  const params = runParams(settings, { prompt, sandboxRoot: workspace, runId, continueFrom });
  const result = (await connection.sendRequest('cleveragents/run', params)) as RunResult;
  store.settleRun(runId, result);
  return { runId, result };
}

describe('the run store against the real daemon', () => {
  it('initializes with approvals on and the protocol the types were made from', () => {
    assert.equal(capability?.approvals, true);
    assert.equal(capability?.protocolVersion.split('.')[0], '1');
  });

  it('streams a run with an approval into the same state the history holds', async () => {
    decisions.set('write_file', 'allow');
    const { runId, result } = await run('Summarise the TODOs into out.txt');
    assert.equal(result.stopReason, 'final_answer');
    assert.equal(readFileSync(join(workspace, 'out.txt'), 'utf8'), 'two TODOs\n', 'the allowed write happened');
    assert.deepEqual(
      asked.map((params) => params.toolName),
      ['write_file'],
    );

    const live = store.run(runId);
    assert.ok(live);
    assert.deepEqual(live.gaps(), []);
    assert.equal(live.bufferedCount, 0);
    assert.equal(store.activeRun, null);
    const rows = live.entries.flatMap((entry) => (entry.kind === 'toolCall' ? [entry] : []));
    assert.deepEqual(
      rows.map((row) => [row.callId, row.status, row.approval?.state ?? null]),
      [
        ['c_read', 'success', null],
        ['c_write', 'success', 'allow'],
      ],
    );
    assert.deepEqual(
      rows.map((row) => row.record),
      result.toolCallHistory,
    );

    const detail = (await connection.sendRequest('cleveragents/getRun', { runId })) as RunDetail;
    const stored = RunState.fromDetail(detail);
    const summary = (state: RunState): unknown =>
      state.entries.map((entry) =>
        entry.kind === 'toolCall' ? ['call', entry.callId, entry.status] : entry.kind === 'text' ? ['text', entry.text] : [entry.kind],
      );
    assert.deepEqual(summary(stored), summary(live));
    assert.equal(live.header.sandboxRoot, detail.sandboxRoot);
    // The result carries what undo needs (1.3): the panel reads no `getRun` after a run.
    assert.ok(result.checkpoints.length > 0, 'the allowed write took a checkpoint');
    assert.deepEqual(result.checkpoints, detail.checkpoints);
    assert.deepEqual(undoInfoOf(result), undoInfoOf(detail));
  });

  it('continues a finished run and lists both in the history', async () => {
    decisions.set('write_file', 'deny');
    const first = (await connection.sendRequest('cleveragents/runs', { limit: 10, offset: 0 })) as RunsResult;
    const previous = first.runs[0];
    assert.ok(previous);
    const { runId, result } = await run('Now say it again', previous.runId);
    assert.equal(result.continuedFrom, previous.runId);
    assert.equal(store.run(runId)?.header.continuedFrom, previous.runId);
    const denied = result.toolCallHistory.find((record) => record.toolName === 'write_file');
    assert.equal(denied?.errorKind, 'denied');
    const history = (await connection.sendRequest('cleveragents/runs', { limit: 10, offset: 0 })) as RunsResult;
    assert.deepEqual(
      history.runs.slice(0, 2).map((summary) => summary.runId),
      [runId, previous.runId],
    );
  });
});
