import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { RunStore } from '../../src/host/runStore';
import { conversationOf, groupConversations, lastRunTurn, type TurnLink } from '../../src/shared/conversations';
import type { HostMessage } from '../../src/shared/messages';
import { scenario } from '../fixtures/streams';

function turn(runId: string, startedAt: number | null, link: Partial<TurnLink> = {}): TurnLink & { prompt: string } {
  return { runId, kind: 'run', continuedFrom: null, restoredRunId: null, startedAt, prompt: runId, ...link };
}

describe('groupConversations', () => {
  it('chains follow-ups and puts restores in the conversation they went back on', () => {
    // As `cleveragents/runs` lists them: newest first.
    const runs = [
      turn('c', 40, { continuedFrom: 'b' }),
      turn('undo-of-undo', 35, { kind: 'restore', restoredRunId: 'undo-b' }),
      turn('undo-b', 30, { kind: 'restore', restoredRunId: 'b' }),
      turn('other', 25),
      turn('b', 20, { continuedFrom: 'a' }),
      turn('a', 10),
    ];
    const conversations = groupConversations(runs);
    assert.deepEqual(
      conversations.map((c) => [c.rootId, c.turns.map((t) => t.runId)]),
      [
        ['a', ['a', 'b', 'undo-b', 'undo-of-undo', 'c']],
        ['other', ['other']],
      ],
    );
    const first = conversations[0];
    assert.ok(first !== undefined);
    assert.equal(lastRunTurn(first)?.runId, 'c');
    assert.equal(conversationOf(runs, 'undo-b')?.rootId, 'a');
    assert.equal(conversationOf(runs, 'nowhere'), null);
  });

  it('starts a conversation at a turn whose predecessor is not listed, and survives a cycle', () => {
    const runs = [turn('late', 50, { continuedFrom: 'pruned' }), turn('x', 2, { continuedFrom: 'y' }), turn('y', 1, { continuedFrom: 'x' })];
    const conversations = groupConversations(runs);
    assert.deepEqual(
      conversations.map((c) => c.turns.map((t) => t.runId)),
      [['late'], ['y', 'x']],
    );
  });

  it('orders a turn not started yet last, and a restore-only conversation has no run to continue', () => {
    const runs = [turn('pending', null, { continuedFrom: 'a' }), turn('a', 10)];
    assert.deepEqual(conversationOf(runs, 'a')?.turns.map((t) => t.runId), ['a', 'pending']);
    const restoreOnly = groupConversations([turn('r', 5, { kind: 'restore', restoredRunId: 'gone' })]);
    const only = restoreOnly[0];
    assert.ok(only !== undefined);
    assert.equal(lastRunTurn(only), null);
  });
});

describe('RunStore conversations', () => {
  const FINAL = scenario('final_answer');

  function store(): { store: RunStore; messages: HostMessage[] } {
    const runStore = new RunStore({ schedule: (flush) => flush() });
    const messages: HostMessage[] = [];
    runStore.onMessage((message) => messages.push(message));
    return { store: runStore, messages };
  }

  it('lists one tab per conversation and sends the earlier turns with the one on display', () => {
    const { store: runs, messages } = store();
    runs.beginRun('first', { prompt: 'Write notes', startedAt: 10 });
    assert.ok(FINAL.result !== null);
    runs.settleRun('first', FINAL.result);
    runs.beginRun('second', { prompt: 'Now shorten them', continuedFrom: 'first', startedAt: 20 });
    runs.beginRun('elsewhere', { prompt: 'Unrelated', startedAt: 30 });
    const tabs = runs.tabs();
    assert.deepEqual(
      tabs.map((tab) => [tab.runId, tab.prompt, tab.turns, tab.active]),
      [
        ['second', 'Write notes', 2, true],
        ['elsewhere', 'Unrelated', 1, true],
      ],
    );
    runs.display('second');
    const shown = messages.filter((m) => m.type === 'showRun').at(-1);
    assert.ok(shown?.type === 'showRun');
    assert.equal(shown.run?.header.runId, 'second');
    assert.deepEqual(shown.thread.before.map((t) => t.header.prompt), ['Write notes']);
    assert.deepEqual(shown.thread.after, []);
    // Opening the first turn shows the follow-up after it.
    runs.display('first');
    assert.deepEqual(runs.thread().after.map((t) => t.header.runId), ['second']);
    runs.display(null);
    assert.deepEqual(runs.thread(), { before: [], after: [] });
  });
});

describe('RunStore: a restore read back from the history', () => {
  it('joins the conversation of the run it went back on, in the list and the thread', () => {
    const runs = new RunStore({ schedule: (flush) => flush() });
    const FINAL = scenario('final_answer');
    assert.ok(FINAL.result !== null);
    runs.beginRun('edit', { prompt: 'Edit the notes', startedAt: 100 });
    runs.settleRun('edit', FINAL.result);
    const restore = { ...FINAL.detail, runId: 'restore_9', prompt: 'undo run edit', kind: 'restore' as const, restoredRunId: 'edit', continuedFrom: null, startedAt: 200 };
    runs.keepStoredRun(restore);
    assert.deepEqual(
      runs.tabs().map((tab) => [tab.runId, tab.prompt, tab.turns]),
      [['restore_9', 'Edit the notes', 2]],
    );
    runs.display('restore_9');
    assert.deepEqual(runs.thread().before.map((turn) => turn.header.runId), ['edit']);
    // The next prompt goes on from the run, not the restore: a new turn after both.
    runs.beginRun('again', { prompt: 'Edit them again', continuedFrom: 'edit', startedAt: 300 });
    assert.deepEqual(runs.thread().before.map((turn) => turn.header.runId), ['edit', 'restore_9']);
    assert.equal(runs.tabs().length, 1);
  });
});
