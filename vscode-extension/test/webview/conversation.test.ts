// The panel as a conversation, in the real page (headless Chromium) behind the extension's
// real RunStore: each prompt continues the thread on display, a restore shows inside it, the
// prompt box's keys, and / completion of the custom commands.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { PromptCommandInfo, RunDetail, RunSummary } from '../../src/protocol';
import type { WebviewMessage } from '../../src/shared/messages';
import { recordedRuns } from '../fixtures/streams';
import { notifier, PanelHarness, runResult, useBrowser } from './harness';

const session = useBrowser();
const PROMPT = 'textarea[data-testid="prompt"]';

/** A host that starts each `run`/`continue` the page posts as the next run (`turn-N`). */
function startsRuns(harness: PanelHarness): void {
  let count = 0;
  harness.onMessage = (message: WebviewMessage) => {
    if (message.type === 'run' || message.type === 'continue') {
      count += 1;
      harness.store.beginRun(`turn-${count}`, {
        prompt: message.prompt,
        sandboxRoot: '/w',
        continuedFrom: message.type === 'continue' ? message.runId : null,
      });
    } else if (message.type === 'newConversation') {
      harness.store.display(null);
    } else if (message.type === 'openRun') {
      harness.store.display(message.runId);
    }
  };
}

async function answer(harness: PanelHarness, runId: string, text: string): Promise<void> {
  const send = notifier(harness, runId);
  send('cleveragents/iterationStarted', { iteration: 1 });
  send('cleveragents/textDelta', { iteration: 1, text });
  harness.store.settleRun(runId, runResult(runId, text));
  await harness.delivered();
}

function restoreOf(runId: string, startedAt: number): RunDetail {
  return {
    runId: 'restore_1',
    prompt: `undo run ${runId}`,
    status: 'finished',
    startedAt,
    finishedAt: startedAt + 1,
    iterations: 0,
    toolCallCount: 0,
    sandboxRoot: '/w',
    automationProfile: '',
    continuedFrom: null,
    maxIterations: 0,
    content: `undo run ${runId}: 1 file(s) restored: 1 modified`,
    stopReason: 'final_answer',
    error: null,
    errorType: null,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
    toolCallHistory: [],
    messages: [],
    kind: 'restore',
    plan: null,
    restoredRunId: runId,
    restoredIteration: null,
    batch: null,
    checkpoints: [{ iteration: null, createdAt: startedAt, note: null }],
    changedFiles: [{ path: 'notes.txt', change: 'modified' }],
    checkpointWarning: null,
    iterationUsage: [],
    resources: [],
    images: [],
  };
}

describe('the panel as a conversation', () => {
  it('threads two prompts and an undo, and the next prompt continues the last run', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page, store } = harness;
    startsRuns(harness);
    await page.fill(PROMPT, 'Write notes');
    await page.press(PROMPT, 'Enter');
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'run'), { type: 'run', prompt: 'Write notes' });
    await answer(harness, 'turn-1', 'Notes written.');
    await page.locator('[data-testid="run-end"]').waitFor();
    assert.equal(await page.inputValue(PROMPT), '', 'the box is cleared once the turn started');

    await page.fill(PROMPT, 'Now shorten them');
    await page.press(PROMPT, 'Enter');
    const second = await harness.waitForPosted((m) => m.type === 'continue');
    assert.deepEqual(second, { type: 'continue', prompt: 'Now shorten them', runId: 'turn-1' });
    await answer(harness, 'turn-2', 'Shortened.');
    await page.locator('[data-testid="turn-live"] [data-testid="run-end"]').waitFor();

    // The undo of the second turn opens inside the conversation, after both prompts.
    store.keepStoredRun(restoreOf('turn-2', Date.now() / 1000 + 1));
    store.display('restore_1');
    await harness.delivered();
    await page.locator('[data-testid="turn-live"] .end-title', { hasText: 'Restored' }).waitFor();
    const headings = page.locator('[data-testid="thread"] [data-testid="turn-heading"]:visible');
    assert.deepEqual(await headings.allTextContents(), ['Write notes', 'Now shorten them', '↶ undo run turn-2']);
    assert.deepEqual(
      await page.locator('[data-testid="thread-before"] [data-testid="assistant-text"]').allTextContents(),
      ['Notes written.', 'Shortened.'],
    );
    assert.equal(await page.textContent('[data-testid="run-heading"]'), 'Write notes');
    await page.locator('[data-testid="run-tab"][data-run-id="restore_1"][data-turns="3"]').waitFor({ state: 'attached' });
    assert.equal(await page.locator('[data-testid="run-tab"]').count(), 1, 'one conversation, not three runs');
    await harness.screenshot('webview-conversation.png');

    // After the undo, the next prompt continues the conversation's last run.
    await page.fill(PROMPT, 'Try again, shorter');
    await page.press(PROMPT, 'Enter');
    const third = harness.posted.filter((m) => m.type === 'continue');
    await page.locator('[data-testid="turn-live"] [data-testid="turn-heading"]', { hasText: 'Try again, shorter' }).waitFor();
    assert.deepEqual(harness.posted.filter((m) => m.type === 'continue').at(-1), { type: 'continue', prompt: 'Try again, shorter', runId: 'turn-2' });
    assert.equal(third.length >= 1, true);

    // "New": the next prompt starts a conversation of its own.
    await answer(harness, 'turn-3', 'Done.');
    await page.click('button[data-testid="new-conversation"]');
    await page.locator('[data-testid="run-heading"]', { hasText: 'New conversation' }).waitFor();
    assert.equal(await page.locator('[data-testid="thread-before"] [data-testid="turn"]').count(), 0);
    await page.fill(PROMPT, 'Something else');
    await page.press(PROMPT, 'Enter');
    await page.locator('[data-testid="run-tab"]').nth(1).waitFor();
    assert.deepEqual(harness.posted.at(-1), { type: 'run', prompt: 'Something else' });
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('lists History as conversations: follow-ups and restores inside, opened at the newest turn', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page, store } = harness;
    const [base] = recordedRuns();
    assert.ok(base !== undefined);
    const summary = (runId: string, prompt: string, startedAt: number, link: Partial<RunSummary> = {}): RunSummary => ({
      ...base,
      runId,
      prompt,
      startedAt,
      toolCallCount: 1,
      continuedFrom: null,
      kind: 'run',
      restoredRunId: null,
      restoredIteration: null,
      batch: null,
      ...link,
    });
    // Newest first, as `cleveragents/runs` answers.
    store.setHistory([
      summary('other', 'Something else', 50),
      summary('undo', 'undo run second', 40, { kind: 'restore', restoredRunId: 'second', toolCallCount: 0 }),
      summary('second', 'Now shorten them', 30, { continuedFrom: 'first' }),
      summary('first', 'Write notes', 20),
    ]);
    await harness.delivered();
    const items = page.locator('[data-testid="history-item"]');
    await items.nth(1).waitFor();
    assert.equal(await items.count(), 2, 'two conversations, not four runs');
    assert.equal(await page.textContent('[data-testid="history-count"]'), '(2)');
    assert.deepEqual(await items.evaluateAll((els) => els.map((e) => [e.getAttribute('data-run-id'), e.getAttribute('data-turns')])), [
      ['other', '1'],
      ['undo', '3'],
    ]);
    const conversation = items.nth(1);
    assert.equal(await conversation.locator('.history-prompt').textContent(), 'Write notes');
    assert.match((await conversation.locator('.history-meta').textContent()) ?? '', /2 prompts · 2 tool calls · 1 restore/);
    await conversation.click();
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'openRun'), { type: 'openRun', runId: 'undo' });
    await harness.close();
  });

  it('Shift+Enter breaks the line, Up recalls the last prompt, Escape stops the running turn', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page } = harness;
    startsRuns(harness);
    await page.fill(PROMPT, 'line one');
    await page.press(PROMPT, 'Shift+Enter');
    await page.keyboard.type('line two');
    assert.equal(await page.inputValue(PROMPT), 'line one\nline two');
    assert.equal(harness.posted.filter((m) => m.type === 'run').length, 0, 'Shift+Enter sends nothing');
    await page.press(PROMPT, 'Enter');
    await harness.waitForPosted((m) => m.type === 'run');
    await harness.delivered();
    await page.locator('button[data-testid="stop"]:enabled').waitFor();
    assert.equal(await page.isEnabled('button[data-testid="run"]'), false, 'no second prompt while the turn runs');
    await page.press(PROMPT, 'Escape');
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'stop'), { type: 'stop', runId: 'turn-1' });
    harness.store.settleRun('turn-1', { ...runResult('turn-1', 'stopped'), stopReason: 'cancelled' });
    await harness.delivered();
    await page.locator('button[data-testid="stop"]:disabled').waitFor();
    assert.equal(await page.inputValue(PROMPT), '');
    await page.press(PROMPT, 'ArrowUp');
    assert.equal(await page.inputValue(PROMPT), 'line one\nline two', 'Up in an empty box recalls the last prompt');
    await page.press(PROMPT, 'ArrowDown');
    assert.equal(await page.inputValue(PROMPT), '', 'Down past the newest empties the box again');
    await harness.close();
  });

  it('offers the custom commands when / is typed: arrows and Enter or Tab choose one', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page } = harness;
    const commands: PromptCommandInfo[] = [
      { name: 'explain', description: 'Explain code simply', argumentHint: null, source: 'user' },
      { name: 'review', description: 'Review a file as the team does', argumentHint: 'FILE', source: 'workspace' },
    ];
    harness.onMessage = (message) => {
      if (message.type === 'listCommands') void harness.send({ type: 'commands', commands });
    };
    await page.click(PROMPT);
    await page.keyboard.type('/');
    await harness.waitForPosted((m) => m.type === 'listCommands');
    const options = page.locator('[data-testid="command-option"]');
    await options.nth(1).waitFor();
    assert.deepEqual(await options.allTextContents(), ['/explainExplain code simply', '/review FILEReview a file as the team does']);
    await harness.screenshot('webview-command-completion.png');
    await page.keyboard.press('ArrowDown');
    assert.equal(await options.nth(1).getAttribute('aria-selected'), 'true');
    await page.keyboard.press('Enter');
    assert.equal(await page.inputValue(PROMPT), '/review ');
    assert.equal(await page.locator('[data-testid="mentions"]').isHidden(), true);
    assert.equal(harness.posted.filter((m) => m.type === 'run').length, 0, 'choosing sends nothing');
    await page.keyboard.type('app.py');
    await page.fill(PROMPT, '');
    await page.keyboard.type('/ex');
    await page.locator('[data-testid="command-option"][data-name="explain"]').waitFor();
    assert.equal(await options.count(), 1);
    await page.keyboard.press('Tab');
    assert.equal(await page.inputValue(PROMPT), '/explain ');
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });
});
