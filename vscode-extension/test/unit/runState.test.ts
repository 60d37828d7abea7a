import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { ApproveToolCallParams, RunResult } from '../../src/protocol';
import { type Entry, type RunNotification, RunState, type ToolCallEntry } from '../../src/shared/runState';
import { notificationsOf, scenario, startSeqOf } from '../fixtures/streams';

const FINAL = scenario('final_answer');
const FINAL_STREAM = notificationsOf(FINAL);
const RUN_ID = FINAL.params.runId;

function fed(notifications: RunNotification[], runId = RUN_ID): RunState {
  const state = new RunState(runId);
  for (const notification of notifications) {
    state.apply(notification);
  }
  return state;
}

function toolCalls(state: RunState): ToolCallEntry[] {
  return state.entries.filter((entry): entry is ToolCallEntry => entry.kind === 'toolCall');
}

/** What the user sees, without ids that depend on arrival (text counters). */
function visible(state: RunState): unknown[] {
  return state.entries.map((entry) => {
    const { id: _id, ...rest } = entry;
    return entry.kind === 'toolCall' ? { ...rest, id: entry.id } : rest;
  });
}

/** A deterministic shuffle (mulberry32), so a failing order can be replayed. */
function shuffled<T>(items: T[], seed: number): T[] {
  let a = seed;
  const random = (): number => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

function approvalParams(callId: string, toolName = 'write_file'): ApproveToolCallParams {
  return {
    runId: RUN_ID,
    callId,
    toolName,
    inputs: { path: 'a.txt', content: 'x' },
    mutating: true,
    executesCode: false,
    automationProfile: 'ask',
    iteration: 1,
  };
}

describe('RunState with the recorded final_answer stream', () => {
  it('builds iterations, streamed text, one row per call and the end', () => {
    const state = fed(FINAL_STREAM);
    const kinds = state.entries.map((entry) => entry.kind);
    assert.deepEqual(
      kinds.filter((kind) => kind === 'iteration').length,
      3,
      'three iteration markers',
    );
    assert.equal(kinds[kinds.length - 1], 'end');
    assert.equal(state.header.phase, 'finished');
    assert.equal(state.header.automationProfile, 'ask');
    assert.equal(state.header.sandboxRoot, '/workspace');
    const texts = state.entries.filter((entry) => entry.kind === 'text').map((entry) => (entry.kind === 'text' ? entry.text : ''));
    assert.deepEqual(texts, [
      'Let me look at the workspace first.',
      'I will write a summary and check the tests.',
      'I wrote summary.txt: notes.txt has two open TODOs. I did not run the command you denied.',
    ]);
    const calls = toolCalls(state);
    assert.deepEqual(
      calls.map((call) => [call.callId, call.status, call.record?.errorKind ?? null]),
      [
        ['call_list', 'success', null],
        ['call_read', 'success', null],
        ['call_missing', 'failure', 'execution_error'],
        ['call_write', 'success', null],
        ['call_command', 'failure', 'denied'],
        ['call_edit', 'success', null],
      ],
    );
    assert.equal(state.end?.stopReason, 'final_answer');
    assert.equal(state.nextSeq, (FINAL_STREAM.at(-1)?.params.seq ?? 0) + 1);
    assert.deepEqual(state.gaps(), []);
  });

  it('ends with the same records as the run result', () => {
    const state = fed(FINAL_STREAM);
    const result = FINAL.result as RunResult;
    const records = toolCalls(state).map((call) => call.record);
    const byId = new Map(records.map((record) => [record?.callId, record]));
    for (const record of result.toolCallHistory) {
      assert.deepEqual(byId.get(record.callId), record);
    }
    assert.equal(records.length, result.toolCallHistory.length);
  });

  it('rows appear running when the call starts and settle when the record arrives', () => {
    const state = new RunState(RUN_ID);
    const changes: [string, string, string][] = [];
    state.onEntry((entry, change) => {
      if (entry.kind === 'toolCall' && entry.callId === 'call_missing') changes.push([change, entry.status, entry.callId]);
    });
    for (const notification of FINAL_STREAM) state.apply(notification);
    assert.deepEqual(changes, [
      ['added', 'running', 'call_missing'],
      ['updated', 'failure', 'call_missing'],
    ]);
  });

  it('gives the same result whatever order the notifications arrive in', () => {
    const expected = visible(fed(FINAL_STREAM));
    for (const seed of [1, 2, 3, 42, 1234]) {
      const state = fed(shuffled(FINAL_STREAM, seed));
      assert.deepEqual(visible(state), expected, `seed ${seed}`);
      assert.equal(state.bufferedCount, 0);
    }
  });

  it('buffers early notifications until the missing ones arrive', () => {
    const state = new RunState(RUN_ID);
    const [first, second, third] = FINAL_STREAM;
    assert.ok(first && second && third);
    assert.equal(state.apply(third), 'buffered');
    assert.equal(state.apply(second), 'buffered');
    assert.equal(state.entries.length, 0);
    assert.deepEqual(state.gaps(), [1]);
    assert.equal(state.apply(first), 'applied');
    assert.equal(state.bufferedCount, 0);
    assert.equal(state.nextSeq, 4);
  });

  it('ignores duplicates, applied or buffered', () => {
    const state = new RunState(RUN_ID);
    const outcomes = FINAL_STREAM.flatMap((notification) => [state.apply(notification), state.apply(notification)]);
    assert.equal(outcomes.filter((outcome) => outcome === 'duplicate').length, FINAL_STREAM.length);
    assert.deepEqual(visible(state), visible(fed(FINAL_STREAM)));
    const early = new RunState(RUN_ID);
    const last = FINAL_STREAM.at(-1);
    assert.ok(last);
    assert.equal(early.apply(last), 'buffered');
    assert.equal(early.apply(last), 'duplicate');
  });

  it('ignores notifications of other runs and malformed seqs', () => {
    const state = new RunState('another-run');
    const [first] = FINAL_STREAM;
    assert.ok(first);
    assert.equal(state.apply(first), 'ignored');
    const bad = { ...first, params: { ...first.params, runId: 'another-run', seq: 0 } } as RunNotification;
    assert.equal(state.apply(bad), 'ignored');
    assert.equal(state.entries.length, 0);
  });

  it('detects a gap, then settles it from the run result', () => {
    const lost = FINAL_STREAM.find((n) => n.method === 'cleveragents/toolCall' && n.params.record.callId === 'call_list');
    assert.ok(lost);
    const state = fed(FINAL_STREAM.filter((notification) => notification !== lost));
    assert.deepEqual(state.gaps(), [lost.params.seq]);
    assert.equal(state.finished, false, 'runFinished waits behind the gap');
    const listRow = toolCalls(state).find((call) => call.callId === 'call_list');
    assert.equal(listRow?.status, 'running');

    state.settle(FINAL.result as RunResult);
    assert.equal(state.finished, true);
    assert.equal(state.bufferedCount, 0);
    const gap = state.entries.find((entry) => entry.kind === 'gap');
    assert.deepEqual(gap?.kind === 'gap' ? gap.missing : null, [lost.params.seq]);
    const settled = toolCalls(state).find((call) => call.callId === 'call_list');
    assert.equal(settled?.status, 'success');
    assert.equal(toolCalls(state).length, 6, 'no row twice');
    assert.equal(state.end?.stopReason, 'final_answer');
  });

  it('ends from the result when runFinished never came', () => {
    const state = fed(FINAL_STREAM.filter((n) => n.method !== 'cleveragents/runFinished'));
    assert.equal(state.finished, false);
    state.settle(FINAL.result as RunResult);
    assert.equal(state.end?.stopReason, 'final_answer');
    assert.equal(state.end?.content, (FINAL.result as RunResult).content);
    assert.equal(state.entries.filter((entry) => entry.kind === 'gap').length, 0);
  });

  it('adds records the stream never carried', () => {
    const withoutRecords = FINAL_STREAM.filter(
      (n) => !(n.method === 'cleveragents/toolCall' || n.method === 'cleveragents/toolCallStarted'),
    );
    const state = fed(withoutRecords);
    state.settle(FINAL.result as RunResult);
    assert.equal(toolCalls(state).length, 6);
    assert.ok(toolCalls(state).every((call) => call.status !== 'running'));
  });
});

describe('RunState approvals', () => {
  const upToWriteStart = FINAL_STREAM.filter((n) => n.params.seq <= startSeqOf(FINAL, 'call_write'));

  it('attaches an approval to its row and settles it once', () => {
    const state = fed(upToWriteStart);
    state.requestApproval('approval-1', approvalParams('call_write'));
    const row = toolCalls(state).find((call) => call.callId === 'call_write');
    assert.equal(row?.approval?.state, 'pending');
    assert.deepEqual(state.pendingApprovalIds(), ['approval-1']);
    assert.equal(state.counts().pendingApprovals, 1);
    state.settleApproval('approval-1', 'allow_for_run');
    assert.equal(row?.approval?.state, 'allow_for_run');
    state.settleApproval('approval-1', 'deny');
    assert.equal(row?.approval?.state, 'allow_for_run', 'a settled approval stays settled');
    assert.deepEqual(state.pendingApprovalIds(), []);
  });

  it('shows a row for an approval that came before its toolCallStarted', () => {
    const state = fed(FINAL_STREAM.filter((n) => n.params.seq <= 16));
    state.requestApproval('approval-9', approvalParams('call_unseen', 'run_command'));
    const row = toolCalls(state).find((call) => call.callId === 'call_unseen');
    assert.equal(row?.toolName, 'run_command');
    assert.equal(row?.status, 'running');
    assert.equal(row?.approval?.state, 'pending');
  });

  it('ignores a second request with the same id and unknown settles', () => {
    const state = fed(upToWriteStart);
    state.requestApproval('approval-1', approvalParams('call_write'));
    state.requestApproval('approval-1', approvalParams('call_write'));
    state.settleApproval('nope', 'allow');
    assert.equal(toolCalls(state).length, 4);
    assert.deepEqual(state.pendingApprovalIds(), ['approval-1']);
  });

  it('withdraws a pending approval when the record or the end arrives first', () => {
    const state = fed(upToWriteStart);
    state.requestApproval('approval-1', approvalParams('call_write'));
    for (const notification of FINAL_STREAM) state.apply(notification);
    const row = toolCalls(state).find((call) => call.callId === 'call_write');
    assert.equal(row?.approval?.state, 'withdrawn');
    assert.deepEqual(state.pendingApprovalIds(), []);
  });

  it('fail() ends the run with the error and withdraws approvals', () => {
    const state = fed(upToWriteStart);
    state.requestApproval('approval-1', approvalParams('call_write'));
    state.fail('The daemon stopped during the run.');
    assert.equal(state.end?.stopReason, 'error');
    assert.equal(state.end?.error, 'The daemon stopped during the run.');
    assert.deepEqual(state.pendingApprovalIds(), []);
    state.fail('again');
    assert.equal(state.entries.filter((entry) => entry.kind === 'end').length, 1);
  });
});

describe('RunState text and call ids', () => {
  const base = { runId: 'r' };

  it('concatenates deltas per iteration and starts a new block after a tool call', () => {
    const state = new RunState('r');
    const stream: RunNotification[] = [
      { method: 'cleveragents/iterationStarted', params: { ...base, seq: 1, iteration: 1 } },
      { method: 'cleveragents/textDelta', params: { ...base, seq: 2, iteration: 1, text: 'Hello ' } },
      { method: 'cleveragents/textDelta', params: { ...base, seq: 3, iteration: 1, text: 'world.' } },
      { method: 'cleveragents/toolCallStarted', params: { ...base, seq: 4, iteration: 1, callId: 'c1', toolName: 't', inputs: {} } },
      { method: 'cleveragents/textDelta', params: { ...base, seq: 5, iteration: 1, text: 'After.' } },
      { method: 'cleveragents/textDelta', params: { ...base, seq: 6, iteration: 1, text: '' } },
    ];
    stream.forEach((notification) => state.apply(notification));
    assert.deepEqual(
      state.entries.map((entry: Entry) => (entry.kind === 'text' ? entry.text : entry.kind)),
      ['iteration', 'Hello world.', 'toolCall', 'After.'],
    );
  });

  it('keeps two rows when a call id is reused in a later iteration', () => {
    const state = new RunState('r');
    const record = (seq: number, iteration: number): RunNotification => ({
      method: 'cleveragents/toolCall',
      params: {
        ...base,
        seq,
        record: {
          callId: 'same',
          toolName: 't',
          inputs: {},
          output: {},
          durationMs: 1,
          success: true,
          error: null,
          errorKind: null,
          iteration,
        },
      },
    });
    [
      { method: 'cleveragents/toolCallStarted', params: { ...base, seq: 1, iteration: 1, callId: 'same', toolName: 't', inputs: {} } },
      record(2, 1),
      { method: 'cleveragents/toolCallStarted', params: { ...base, seq: 3, iteration: 2, callId: 'same', toolName: 't', inputs: {} } },
      record(4, 2),
    ].forEach((notification) => state.apply(notification as RunNotification));
    const calls = toolCalls(state);
    assert.equal(calls.length, 2);
    assert.notEqual(calls[0]?.id, calls[1]?.id);
    assert.deepEqual(calls.map((call) => call.status), ['success', 'success']);
  });
});

describe('RunState workspace checkpoints', () => {
  const base = { runId: 'r' };

  it('shows a slow checkpoint while it is saved, then its own time and file count', () => {
    const state = new RunState('r');
    state.apply({ method: 'cleveragents/iterationStarted', params: { ...base, seq: 1, iteration: 1 } });
    state.apply({ method: 'cleveragents/snapshotProgress', params: { ...base, seq: 2, iteration: 1, elapsedMs: 1200 } });
    assert.deepEqual(state.header.snapshot, { iteration: 1, durationMs: 1200, files: null, error: null, saving: true });
    state.apply({
      method: 'cleveragents/snapshot',
      params: { ...base, seq: 3, iteration: 1, durationMs: 1850.5, files: 60000, error: null },
    });
    assert.deepEqual(state.header.snapshot, { iteration: 1, durationMs: 1850.5, files: 60000, error: null, saving: false });
    // Not a transcript row: the tool calls keep their own durations.
    assert.deepEqual(state.entries.map((entry: Entry) => entry.kind), ['iteration']);
  });

  it('says why a checkpoint failed', () => {
    const state = new RunState('r');
    state.apply({
      method: 'cleveragents/snapshot',
      params: { ...base, seq: 1, iteration: 2, durationMs: 3, files: null, error: 'disk full' },
    });
    assert.equal(state.header.snapshot?.error, 'disk full');
  });
});

describe('RunState snapshots', () => {
  it('round-trips through JSON and keeps applying where it left off', () => {
    const full = visible(fed(FINAL_STREAM));
    for (const cut of [0, 1, 10, 20, 28, FINAL_STREAM.length - 1]) {
      const first = fed(FINAL_STREAM.slice(0, cut));
      first.requestApproval('approval-x', approvalParams('call_write'));
      const copy = RunState.fromSnapshot(JSON.parse(JSON.stringify(first.toSnapshot())));
      assert.deepEqual(visible(copy), visible(first), `cut ${cut}`);
      // Replaying everything (as a webview reloaded mid-run would get) only adds the rest.
      for (const notification of FINAL_STREAM) copy.apply(notification);
      const original = fed(FINAL_STREAM.slice(0, cut));
      original.requestApproval('approval-x', approvalParams('call_write'));
      for (const notification of FINAL_STREAM) original.apply(notification);
      assert.deepEqual(visible(copy), visible(original), `cut ${cut}`);
    }
    assert.ok(full.length > 10);
  });

  it('carries buffered notifications along', () => {
    const state = new RunState(RUN_ID);
    const [first, second, third] = FINAL_STREAM;
    assert.ok(first && second && third);
    state.apply(first);
    state.apply(third);
    const copy = RunState.fromSnapshot(JSON.parse(JSON.stringify(state.toSnapshot())));
    assert.equal(copy.bufferedCount, 1);
    assert.equal(copy.apply(second), 'applied');
    assert.equal(copy.nextSeq, 4);
  });
});

describe('RunState.fromDetail (history)', () => {
  for (const name of ['final_answer', 'max_iterations', 'cancelled', 'error'] as const) {
    it(`rebuilds the ${name} run like its live stream`, () => {
      const recorded = scenario(name);
      const live = fed(notificationsOf(recorded), recorded.params.runId);
      const stored = RunState.fromDetail(recorded.detail);
      const summary = (state: RunState): unknown =>
        toolCalls(state).map((call) => [call.callId, call.toolName, call.status, call.record?.errorKind ?? null]);
      assert.deepEqual(summary(stored), summary(live));
      assert.equal(stored.end?.stopReason, live.end?.stopReason);
      assert.equal(stored.header.source, 'history');
      assert.equal(stored.header.prompt, recorded.params.prompt);
      assert.equal(stored.finished, true);
      const storedTexts = stored.entries.filter((entry) => entry.kind === 'text').map((entry) => (entry.kind === 'text' ? entry.text : ''));
      const liveTexts = live.entries.filter((entry) => entry.kind === 'text').map((entry) => (entry.kind === 'text' ? entry.text : ''));
      assert.deepEqual(storedTexts, liveTexts);
    });
  }

  it('tells a run stopped by a full context window from one stopped at the iteration limit', () => {
    const limited = scenario('max_iterations').detail;
    const exhausted = RunState.fromDetail({ ...limited, status: 'limit', stopReason: 'context_exhausted' });
    assert.equal(exhausted.end?.stopReason, 'context_exhausted');
    assert.equal(RunState.fromDetail(limited).end?.stopReason, 'max_iterations');
  });

  it('treats late notifications for a stored run as duplicates', () => {
    const stored = RunState.fromDetail(FINAL.detail);
    const [first] = FINAL_STREAM;
    assert.ok(first);
    assert.equal(stored.apply(first), 'duplicate');
    const snapshot = JSON.parse(JSON.stringify(stored.toSnapshot()));
    assert.equal(RunState.fromSnapshot(snapshot).apply(first), 'duplicate');
  });
});

describe('the run notifications the host subscribes to', () => {
  it('are every notification of protocol/schema.json that belongs to a run', async () => {
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { RUN_NOTIFICATIONS } = await import('../../src/shared/runNotifications');
    const { EXTENSION_ROOT } = await import('./pythonForTests');
    const schemaPath = join(EXTENSION_ROOT, '..', 'protocol', 'schema.json');
    const schema = JSON.parse(readFileSync(schemaPath, 'utf8')) as {
      'x-methods': Record<string, { kind: string; direction: string; params: { $ref?: string } | null }>;
      $defs: Record<string, { properties?: Record<string, unknown> }>;
    };
    const ofARun = Object.entries(schema['x-methods'])
      .filter(([, method]) => method.kind === 'notification' && method.direction === 'serverToClient')
      .filter(([, method]) => {
        const name = method.params?.$ref?.split('/').pop() ?? '';
        const properties = schema.$defs[name]?.properties ?? {};
        return 'runId' in properties && 'seq' in properties;
      })
      .map(([name]) => name)
      .sort();
    assert.ok(ofARun.includes('cleveragents/plan'));
    assert.deepEqual([...RUN_NOTIFICATIONS].sort(), ofARun);
  });
});
