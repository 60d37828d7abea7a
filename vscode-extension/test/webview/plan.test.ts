// The plan and the project instructions at the top of a run, in the real page (headless
// Chromium) behind the extension's real RunStore: each `cleveragents/plan` replaces the
// checklist, the instructions line names the files, and a run read back from the history
// shows its last plan again.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { RunDetail } from '../../src/protocol';
import { notifier, PanelHarness, runResult, useBrowser } from './harness';

const session = useBrowser();

type Status = 'pending' | 'in_progress' | 'done';

function steps(...statuses: Status[]): { text: string; status: Status }[] {
  const texts = ['Read the notes', 'Write the summary', 'Check the links'];
  return statuses.map((status, index) => ({ text: texts[index] ?? '', status }));
}

async function checklist(harness: PanelHarness): Promise<string[][]> {
  return harness.page
    .locator('[data-testid="plan-step"]')
    .evaluateAll((items) =>
      items.map((item) => [item.getAttribute('data-status') ?? '', item.querySelector('.plan-text')?.textContent ?? '']),
    );
}

describe('the plan and the instructions', () => {
  it('draws each plan as a checklist at the top of the run, in place of the one before', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store, page } = harness;
    store.beginRun('planned', { prompt: 'Summarise the notes', sandboxRoot: '/w' });
    const send = notifier(harness, 'planned');
    send('cleveragents/runStarted', {
      prompt: 'Summarise the notes',
      sandboxRoot: '/w',
      automationProfile: 'ask',
      maxIterations: 25,
      provider: 'replay',
      model: null,
      continuedFrom: null,
      instructions: [
        { path: '/home/me/.config/cleveragents/AGENTS.md', scope: 'user', folder: '', chars: 20, totalChars: 20, truncated: false },
        { path: 'AGENTS.md', scope: 'project', folder: '.', chars: 16000, totalChars: 20000, truncated: true },
      ],
    });
    await harness.delivered();
    const line = page.locator('[data-testid="run-instructions"]');
    await line.waitFor();
    assert.equal(await line.textContent(), 'Using AGENTS.md, 2 files');
    assert.equal(await line.getAttribute('title'), '/home/me/.config/cleveragents/AGENTS.md\nAGENTS.md (cut to the size limit)');
    assert.equal(await page.locator('[data-testid="run-plan"]').isHidden(), true, 'no plan yet');

    send('cleveragents/iterationStarted', { iteration: 1 });
    send('cleveragents/plan', { iteration: 1, callId: 'p1', steps: steps('in_progress', 'pending', 'pending'), explanation: null });
    await harness.delivered();
    await page.locator('[data-testid="plan-title"]', { hasText: 'Plan · 0 of 3 done' }).waitFor();
    assert.deepEqual(await checklist(harness), [
      ['in_progress', 'Read the notes'],
      ['pending', 'Write the summary'],
      ['pending', 'Check the links'],
    ]);
    send('cleveragents/plan', { iteration: 2, callId: 'p2', steps: steps('done', 'in_progress', 'pending'), explanation: 'read them' });
    send('cleveragents/plan', { iteration: 3, callId: 'p3', steps: steps('done', 'done', 'in_progress'), explanation: null });
    await harness.delivered();
    await page.locator('[data-testid="plan-title"]', { hasText: 'Plan · 2 of 3 done' }).waitFor();
    assert.deepEqual(await checklist(harness), [
      ['done', 'Read the notes'],
      ['done', 'Write the summary'],
      ['in_progress', 'Check the links'],
    ]);
    // Screen readers hear each step's status.
    assert.equal(await page.locator('[data-testid="plan-step"]').first().textContent(), '✓Read the notes (done)');
    // The checklist sits above the transcript.
    const planBox = await page.locator('[data-testid="run-plan"]').boundingBox();
    const transcriptBox = await page.locator('[data-testid="transcript"]').boundingBox();
    assert.ok(planBox !== null && transcriptBox !== null && planBox.y < transcriptBox.y);
    store.settleRun('planned', runResult('planned', 'Done.', 3));
    await harness.delivered();
    await harness.screenshot('webview-plan.png');
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('shows a stored run\'s last plan, and none for a run without one', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store, page } = harness;
    const detail: RunDetail = {
      runId: 'stored',
      prompt: 'Summarise the notes',
      status: 'finished',
      startedAt: 1_700_000_000,
      finishedAt: 1_700_000_010,
      iterations: 2,
      toolCallCount: 0,
      sandboxRoot: '/w',
      automationProfile: 'ask',
      continuedFrom: null,
      batch: null,
      maxIterations: 25,
      content: 'Done.',
      stopReason: 'final_answer',
      error: null,
      errorType: null,
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
      toolCallHistory: [],
      messages: [],
      kind: 'run',
      restoredRunId: null,
      restoredIteration: null,
      iterationUsage: [],
      resources: [],
      images: [],
      checkpoints: [],
      changedFiles: [],
      checkpointWarning: null,
      plan: steps('done', 'done', 'done'),
    };
    store.showStoredRun(detail);
    await harness.delivered();
    await page.locator('[data-testid="plan-title"]', { hasText: 'Plan · 3 of 3 done' }).waitFor();
    assert.equal((await checklist(harness)).length, 3);
    store.showStoredRun({ ...detail, runId: 'stored-2', plan: null });
    await harness.delivered();
    await page.locator('[data-testid="run-plan"]').waitFor({ state: 'hidden' });
    assert.equal(await page.locator('[data-testid="plan-step"]').count(), 0);
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });
});
