// Undo in the transcript: "Restore to before this step" on the iterations the daemon holds a
// checkpoint for, "Undo this run" at the end, and a restore's own entry, in the real page
// (headless Chromium) behind the extension's real RunStore.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { RunDetail } from '../../src/protocol';
import { notifier, PanelHarness, runResult, useBrowser } from './harness';

const session = useBrowser();

describe('undo in the transcript', () => {
  it('offers to restore the steps with a checkpoint and to undo the run, once the daemon lists them', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store, page } = harness;
    store.beginRun('three-steps', { prompt: 'Change things', sandboxRoot: '/w' });
    const send = notifier(harness, 'three-steps');
    for (const iteration of [1, 2, 3]) send('cleveragents/iterationStarted', { iteration });
    store.settleRun('three-steps', runResult('three-steps', 'Done.', 3));
    await harness.delivered();
    await page.locator('[data-testid="run-end"]').waitFor();
    // Nothing to offer before the daemon says what it holds.
    assert.equal(await page.locator('[data-testid="undo-run"]').count(), 0);
    assert.equal(await page.locator('[data-testid="restore-iteration"]').count(), 0);

    store.setUndoInfo('three-steps', {
      checkpoints: [1, 3],
      changedFiles: [
        { path: 'notes.txt', change: 'modified' },
        { path: 'build/out.bin', change: 'added' },
      ],
      checkpointWarning: null,
    });
    await harness.delivered();
    await page.locator('[data-testid="undo-run"]', { hasText: 'Undo this run' }).waitFor();
    const offered = await page
      .locator('[data-testid="restore-iteration"]')
      .evaluateAll((buttons) => buttons.map((button) => button.getAttribute('data-iteration')));
    assert.deepEqual(offered, ['1', '3'], 'iteration 2 changed nothing, so it has no checkpoint');
    const changed = await page
      .locator('[data-testid="changed-file"]')
      .evaluateAll((buttons) => buttons.map((button) => [button.getAttribute('data-path'), button.getAttribute('data-change')]));
    assert.deepEqual(changed, [
      ['notes.txt', 'modified'],
      ['build/out.bin', 'added'],
    ]);

    await page.locator('[data-testid="restore-iteration"][data-iteration="3"]').click();
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'restore'), { type: 'restore', runId: 'three-steps', iteration: 3 });
    await page.locator('[data-testid="undo-run"]').click();
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'restore' && m.iteration === null), {
      type: 'restore',
      runId: 'three-steps',
      iteration: null,
    });
    await harness.screenshot('webview-undo.png');
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('shows a run without checkpoints with the daemon\'s warning and no undo', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store, page } = harness;
    store.beginRun('no-git', { prompt: 'Without git', sandboxRoot: '/w' });
    notifier(harness, 'no-git')('cleveragents/iterationStarted', { iteration: 1 });
    store.settleRun('no-git', runResult('no-git', 'Done.'));
    store.setUndoInfo('no-git', { checkpoints: [], changedFiles: [], checkpointWarning: 'git is not installed: this run cannot be undone' });
    await harness.delivered();
    await page.locator('[data-testid="checkpoint-warning"]', { hasText: 'git is not installed' }).waitFor();
    assert.equal(await page.locator('[data-testid="undo-run"]').count(), 0);
    assert.equal(await page.locator('[data-testid="restore-iteration"]').count(), 0);
    await harness.close();
  });

  it('shows a restore from the history as "Restored", with its files and "Undo this restore"', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store, page } = harness;
    const detail: RunDetail = {
      runId: 'restore_1',
      prompt: 'undo run three-steps',
      status: 'finished',
      startedAt: 1_700_000_000,
      finishedAt: 1_700_000_001,
      iterations: 0,
      toolCallCount: 0,
      sandboxRoot: '/w',
      automationProfile: '',
      continuedFrom: null,
      maxIterations: 0,
      content: 'undo run three-steps: 1 file(s) restored: 1 deleted',
      stopReason: 'final_answer',
      error: null,
      errorType: null,
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
      toolCallHistory: [],
      messages: [],
      kind: 'restore',
      plan: null,
      restoredRunId: 'three-steps',
      restoredIteration: null,
      batch: null,
      checkpoints: [{ iteration: null, createdAt: 1_700_000_000, note: null }],
      changedFiles: [{ path: 'build/out.bin', change: 'deleted' }],
      checkpointWarning: null,
      iterationUsage: [],
      resources: [],
      images: [],
    };
    store.showStoredRun(detail);
    await harness.delivered();
    const end = page.locator('[data-testid="run-end"]');
    await end.locator('.end-title', { hasText: 'Restored' }).waitFor();
    await end.locator('[data-testid="changed-file"][data-path="build/out.bin"][data-change="deleted"]').waitFor();
    await end.locator('[data-testid="undo-run"]', { hasText: 'Undo this restore' }).click();
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'restore'), { type: 'restore', runId: 'restore_1', iteration: null });
    // The run it undid is not in this page: a restore alone has no conversation to continue.
    await page.fill('textarea[data-testid="prompt"]', 'A follow-up');
    await page.press('textarea[data-testid="prompt"]', 'Enter');
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'run' || m.type === 'continue'), { type: 'run', prompt: 'A follow-up' });
    await harness.close();
  });
});
