// Stop while an approval is showing, in the real page (headless Chromium) behind the
// extension's real RunStore and the same stopRun the RunController calls: the cancel goes to
// the daemon first, the approval card closes at once (answered `cancel`, never allow or deny),
// and no button is left to answer a question the run no longer asks.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { ApproveToolCallParams, RunResult } from '../../src/protocol';
import { stopRun } from '../../src/host/stopRun';
import { notifier, PanelHarness, runResult, useBrowser } from './harness';

const session = useBrowser();

function writeParams(runId: string, callId: string): ApproveToolCallParams {
  return {
    runId,
    callId,
    toolName: 'write_file',
    inputs: { path: 'notes.txt', content: 'hello' },
    mutating: true,
    executesCode: false,
    automationProfile: 'ask',
    iteration: 1,
    note: null,
  };
}

describe('Stop while an approval is showing', () => {
  it('sends the cancel first, then closes the approval answered cancel', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store, page } = harness;
    const order: string[] = [];
    harness.onMessage = (message) => {
      if (message.type === 'stop' && message.runId !== null) {
        void stopRun(store, message.runId, async (runId) => {
          order.push(`cancel ${runId}`);
          return { cancelled: true };
        });
      }
    };
    store.beginRun('run-s', { prompt: 'Write notes', sandboxRoot: '/w' });
    const send = notifier(harness, 'run-s');
    send('cleveragents/iterationStarted', { iteration: 1 });
    send('cleveragents/toolCallStarted', { iteration: 1, callId: 'c1', toolName: 'write_file', inputs: { path: 'notes.txt', content: 'hello' } });
    const answer = store.requestApproval('approval-s', writeParams('run-s', 'c1')).then((decision) => {
      order.push(`answered ${decision}`);
      return decision;
    });
    await harness.delivered();
    const card = page.locator('[data-testid="tool-call"][data-call-id="c1"] [data-testid="approval"]');
    await page.locator('[data-testid="approval"][data-state="pending"]').waitFor();

    await page.locator('button[data-testid="stop"]').click();
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'stop'), { type: 'stop', runId: 'run-s' });
    assert.equal(await answer, 'cancel');
    assert.deepEqual(order, ['cancel run-s', 'answered cancel']);
    assert.equal(store.pendingApprovalCount(), 0);
    await harness.delivered();
    await page.locator('[data-testid="approval"][data-state="cancel"]').waitFor();
    assert.equal(await card.locator('button').count(), 0, 'no button left to answer with');
    assert.match((await card.textContent()) ?? '', /Stopped: the run was stopped while it asked about write_file/);
    assert.equal(harness.posted.filter((m) => m.type === 'approve').length, 0, 'never allowed nor denied');

    // The daemon then records the call as cancelled and ends the run.
    send('cleveragents/toolCall', {
      record: {
        callId: 'c1',
        toolName: 'write_file',
        inputs: { path: 'notes.txt', content: 'hello' },
        output: {},
        durationMs: 1,
        success: false,
        error: 'the run was cancelled while this call waited for approval; it did not run',
        errorKind: 'cancelled',
        iteration: 1,
      },
    });
    const result: RunResult = { ...runResult('run-s', ''), stopReason: 'cancelled' };
    store.settleRun('run-s', result);
    await harness.delivered();
    await page.locator('[data-testid="run-end"][data-stop-reason="cancelled"]').waitFor();
    assert.match((await page.textContent('[data-testid="tool-call"][data-call-id="c1"]')) ?? '', /cancelled/);
    await harness.screenshot('webview-stop-while-asking.png');
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('closes only the stopped run\'s approvals', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store } = harness;
    store.beginRun('run-a', { prompt: 'A', sandboxRoot: '/w' });
    store.beginRun('run-b', { prompt: 'B', sandboxRoot: '/w' });
    const a = store.requestApproval('approval-a', writeParams('run-a', 'ca'));
    store.requestApproval('approval-b', writeParams('run-b', 'cb'));
    assert.equal(await stopRun(store, 'run-a', async () => ({ cancelled: false })), false);
    assert.equal(await a, 'cancel');
    assert.equal(store.pendingApprovalCount(), 1, "run-b's question stays open");
    assert.equal(store.stopApprovals('run-a'), 0, 'nothing left to close');
    await harness.close();
  });
});
