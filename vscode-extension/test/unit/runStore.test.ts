import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { RunResult } from '../../src/protocol';
import { RunStore } from '../../src/host/runStore';
import { statusText } from '../../src/host/statusText';
import type { HostMessage } from '../../src/shared/messages';
import { RunState, type RunNotification } from '../../src/shared/runState';
import { notificationsOf, recordedRuns, scenario, startSeqOf } from '../fixtures/streams';

const FINAL = scenario('final_answer');
const FINAL_STREAM = notificationsOf(FINAL);
const RUN_ID = FINAL.params.runId;

/** A store whose batches flush only when the test says so. */
function harness(options: { maxCachedHistoryRuns?: number } = {}): {
  store: RunStore;
  messages: HostMessage[];
  tick: () => void;
} {
  const flushes: (() => void)[] = [];
  const store = new RunStore({ schedule: (flush) => flushes.push(flush), ...options });
  const messages: HostMessage[] = [];
  store.onMessage((message) => messages.push(message));
  return {
    store,
    messages,
    tick: () => {
      for (const flush of flushes.splice(0)) flush();
    },
  };
}

/** What a webview does with the store's messages: a RunState of the run on display. */
class WebviewMirror {
  run: RunState | null = null;
  activeRunId: string | null = null;

  receive(message: HostMessage): void {
    switch (message.type) {
      case 'state':
        this.run = message.state.run === null ? null : RunState.fromSnapshot(clone(message.state.run));
        this.activeRunId = message.state.activeRunId;
        break;
      case 'showRun':
        this.run = message.run === null ? null : RunState.fromSnapshot(clone(message.run));
        break;
      case 'runEvents':
        if (this.run?.runId === message.runId) for (const event of clone(message.events)) this.run.handle(event);
        break;
      case 'activeRun':
        this.activeRunId = message.runId;
        break;
      default:
        break;
    }
  }
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

describe('RunStore', () => {
  it('starts a run on display and batches its events into few messages', () => {
    const { store, messages, tick } = harness();
    store.beginRun(RUN_ID, { prompt: FINAL.params.prompt });
    assert.deepEqual(
      messages.map((message) => message.type),
      ['activeRun', 'showRun', 'runs'],
    );
    messages.length = 0;
    for (const notification of FINAL_STREAM) store.notify(notification);
    assert.equal(messages.length, 0, 'nothing sent before the tick');
    tick();
    const batches = messages.filter((message) => message.type === 'runEvents');
    assert.equal(batches.length, 1);
    const [batch] = batches;
    assert.equal(batch?.type, 'runEvents');
    assert.equal(batch?.type === 'runEvents' ? batch.events.length : 0, FINAL_STREAM.length);
  });

  it('forwards neither duplicates nor other runs\' events, and shows a run whole on display()', () => {
    const { store, messages, tick } = harness();
    store.beginRun(RUN_ID, {});
    const other = notificationsOf(scenario('cancelled'));
    for (const notification of [...FINAL_STREAM, ...FINAL_STREAM, ...other]) store.notify(notification);
    tick();
    const events = messages.flatMap((message) => (message.type === 'runEvents' ? message.events : []));
    assert.equal(events.length, FINAL_STREAM.length);
    messages.length = 0;
    const otherRunId = scenario('cancelled').params.runId;
    assert.equal(store.display(otherRunId), true);
    const shown = messages.find((message) => message.type === 'showRun');
    assert.equal(shown?.type === 'showRun' ? shown.run?.header.runId : null, otherRunId);
    assert.equal(store.display('no-such-run'), false);
  });

  it('keeps a webview mirror equal to its own state, also across a reload mid-run', () => {
    const { store, messages, tick } = harness();
    const mirror = new WebviewMirror();
    store.onMessage((message) => mirror.receive(message));
    mirror.receive({ type: 'state', state: store.viewState() });
    store.beginRun(RUN_ID, {});
    const half = Math.floor(FINAL_STREAM.length / 2);
    FINAL_STREAM.slice(0, half).forEach((notification) => store.notify(notification));
    // Half-way, with a batch still pending, the page is recreated: it is listening before
    // it asks for the state, so it sees the pending batch (for a run it does not show yet)
    // and then the whole state.
    const reloaded = new WebviewMirror();
    store.onMessage((message) => reloaded.receive(message));
    reloaded.receive({ type: 'state', state: store.viewState() });
    assert.equal(reloaded.run?.nextSeq, mirror.run?.nextSeq);
    // Notifications the daemon sends twice are not forwarded twice.
    FINAL_STREAM.slice(half - 5).forEach((notification) => store.notify(notification));
    tick();
    store.settleRun(RUN_ID, FINAL.result as RunResult);
    const expected = store.run(RUN_ID)?.toSnapshot().entries;
    assert.deepEqual(mirror.run?.toSnapshot().entries, expected);
    assert.deepEqual(reloaded.run?.toSnapshot().entries, expected);
    assert.equal(reloaded.activeRunId, null);
    assert.ok(messages.length > 0);
  });

  it('waits for approvals and settles each once', async () => {
    const { store, tick } = harness();
    const mirror = new WebviewMirror();
    store.onMessage((message) => mirror.receive(message));
    store.beginRun(RUN_ID, {});
    // Up to the first call's start: the three approvals are then all open at once.
    FINAL_STREAM.filter((n) => n.params.seq <= startSeqOf(FINAL, 'call_write')).forEach((n) => store.notify(n));
    const requests = FINAL.messages.filter((message) => message.kind === 'request');
    const answers = requests.map((request, index) =>
      request.kind === 'request' ? store.requestApproval(`approval-${index}`, request.params) : Promise.resolve(null),
    );
    tick();
    assert.equal(store.pendingApprovalCount(), 3);
    assert.equal(mirror.run?.counts().pendingApprovals, 3);
    assert.equal(statusText(store)?.text, '$(bell-dot) cleveragents: approval needed');
    assert.equal(store.answerApproval('approval-0', 'allow'), true);
    assert.equal(store.answerApproval('approval-0', 'deny'), false, 'answered already');
    assert.equal(store.answerApproval('approval-1', 'deny'), true);
    assert.equal(store.withdrawApproval('approval-2'), true);
    assert.deepEqual(await Promise.all(answers), ['allow', 'deny', 'withdrawn']);
    tick();
    const states = mirror.run?.entries.flatMap((entry) => (entry.kind === 'toolCall' && entry.approval ? [entry.approval.state] : []));
    assert.deepEqual(states, ['allow', 'deny', 'withdrawn']);
    assert.equal(store.pendingApprovalCount(), 0);
  });

  it('answers a protected question "for this run" as allow once, the way the daemon takes it', async () => {
    const { store, tick } = harness();
    const mirror = new WebviewMirror();
    store.onMessage((message) => mirror.receive(message));
    store.beginRun(RUN_ID, {});
    FINAL_STREAM.filter((n) => n.params.seq <= startSeqOf(FINAL, 'call_write')).forEach((n) => store.notify(n));
    const request = FINAL.messages.find((message) => message.kind === 'request');
    assert.ok(request?.kind === 'request');
    const note = 'a protected path (.git/hooks/*): what is written there can run programs later';
    const guarded = store.requestApproval('approval-p', { ...request.params, protected: true, note });
    const plain = store.requestApproval('approval-q', { ...request.params, callId: 'call_other' });
    tick();
    const approvalOf = (callId: string) => {
      const row = mirror.run?.entries.find((e) => e.kind === 'toolCall' && e.callId === callId);
      return row?.kind === 'toolCall' ? row.approval : null;
    };
    assert.equal(approvalOf(request.params.callId)?.protected, true);
    assert.equal(approvalOf(request.params.callId)?.note, note);
    assert.equal(approvalOf('call_other')?.protected, false);
    assert.equal(approvalOf('call_other')?.note, null);
    assert.equal(store.answerApproval('approval-p', 'allow_for_run'), true);
    assert.equal(store.answerApproval('approval-q', 'allow_for_run'), true);
    assert.deepEqual(await Promise.all([guarded, plain]), ['allow', 'allow_for_run']);
    tick();
    assert.equal(approvalOf(request.params.callId)?.state, 'allow');
  });

  it('puts the run that asks for an approval on display', () => {
    const { store, messages, tick } = harness();
    store.beginRun(RUN_ID, {});
    FINAL_STREAM.filter((n) => n.params.seq <= startSeqOf(FINAL, 'call_write')).forEach((n) => store.notify(n));
    store.showStoredRun(scenario('cancelled').detail);
    tick();
    messages.length = 0;
    const request = FINAL.messages.find((message) => message.kind === 'request');
    assert.ok(request?.kind === 'request');
    void store.requestApproval('approval-1', request.params);
    assert.equal(store.displayedRun?.runId, RUN_ID);
    const shown = messages.find((message) => message.type === 'showRun');
    const row = shown?.type === 'showRun' ? shown.run?.entries.find((e) => e.kind === 'toolCall' && e.callId === 'call_write') : undefined;
    assert.equal(row?.kind === 'toolCall' ? row.approval?.state : null, 'pending');
  });

  it('fails a run: error end, approvals withdrawn, no active run', async () => {
    const { store, messages, tick } = harness();
    store.beginRun(RUN_ID, {});
    FINAL_STREAM.filter((n) => n.params.seq <= startSeqOf(FINAL, 'call_write')).forEach((n) => store.notify(n));
    const request = FINAL.messages.find((message) => message.kind === 'request');
    assert.ok(request?.kind === 'request');
    const answer = store.requestApproval('approval-1', request.params);
    store.failRun(RUN_ID, 'The daemon stopped during the run.');
    assert.equal(await answer, 'withdrawn');
    assert.equal(store.activeRun, null);
    assert.equal(store.run(RUN_ID)?.end?.stopReason, 'error');
    tick();
    const last = messages.filter((message) => message.type === 'activeRun').at(-1);
    assert.deepEqual(last, { type: 'activeRun', runId: null });
    const failedEvents = messages.flatMap((m) => (m.type === 'runEvents' ? m.events : [])).filter((e) => e.type === 'failed');
    assert.equal(failedEvents.length, 1);
  });

  it('re-sends the run on display only when settling changed it', () => {
    const { store, messages, tick } = harness();
    store.beginRun(RUN_ID, {});
    FINAL_STREAM.forEach((notification) => store.notify(notification));
    tick();
    messages.length = 0;
    store.settleRun(RUN_ID, FINAL.result as RunResult);
    assert.equal(messages.filter((message) => message.type === 'showRun').length, 0);

    const gappy = harness();
    gappy.store.beginRun(RUN_ID, {});
    FINAL_STREAM.filter((n) => n.params.seq !== 13).forEach((n) => gappy.store.notify(n));
    gappy.tick();
    gappy.messages.length = 0;
    gappy.store.settleRun(RUN_ID, FINAL.result as RunResult);
    const resent = gappy.messages.filter((message) => message.type === 'showRun');
    assert.equal(resent.length, 1);
    const entries = resent[0]?.type === 'showRun' ? resent[0].run?.entries : [];
    assert.ok(entries?.some((entry) => entry.kind === 'gap'));
    assert.equal(gappy.store.activeRun, null);
  });

  it('shows stored runs and keeps only a few in memory', () => {
    const { store } = harness({ maxCachedHistoryRuns: 2 });
    const details = (['final_answer', 'max_iterations', 'cancelled'] as const).map((name) => scenario(name).detail);
    for (const detail of details) store.showStoredRun(detail);
    assert.equal(store.displayedRun?.runId, details[2]?.runId);
    assert.equal(store.run(details[0]?.runId ?? ''), undefined, 'the oldest was dropped');
    assert.ok(store.run(details[1]?.runId ?? ''));
  });

  it('prefers the live state over a stored copy of the same run', () => {
    const { store } = harness();
    store.beginRun(RUN_ID, {});
    FINAL_STREAM.forEach((notification) => store.notify(notification));
    const shown = store.showStoredRun(FINAL.detail);
    assert.equal(shown.header.source, 'live');
  });

  it('reports the history and the daemon to the webview', () => {
    const { store, messages } = harness();
    store.setDaemon({ state: 'failed', message: 'cleveragents is not installed for /usr/bin/python3' });
    assert.equal(statusText(store)?.text, '$(error) cleveragents');
    store.setHistoryLoading();
    store.setHistory(recordedRuns());
    store.setHistoryError('boom');
    assert.deepEqual(
      messages.map((message) => message.type),
      ['daemon', 'history', 'history', 'history'],
    );
    const state = store.viewState();
    assert.equal(state.history.runs.length, recordedRuns().length);
    assert.equal(state.history.error, 'boom');
  });

  it('says what the active run is doing in the status bar', () => {
    const { store } = harness();
    assert.equal(statusText(store), null);
    store.beginRun(RUN_ID, { prompt: 'p' });
    // Up to the third call of iteration 1 starting.
    const third = FINAL_STREAM.findIndex((n) => n.method === 'cleveragents/toolCallStarted' && n.params.callId === 'call_missing');
    FINAL_STREAM.slice(0, third + 1).forEach((n: RunNotification) => store.notify(n));
    assert.equal(statusText(store)?.text, '$(loading~spin) cleveragents: iteration 1, 3 tool calls');
  });
});
