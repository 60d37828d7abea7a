// The runs panel in headless Chromium, fed the notification streams recorded from the real
// daemon (test/fixtures/daemon-streams.json) through the extension's RunStore.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { RunResult, RunSummary } from '../../src/protocol';
import type { RunNotification } from '../../src/shared/runState';
import { largeRun, notificationsOf, recordedRuns, scenario, type RecordedScenario, startSeqOf } from '../fixtures/streams';
import { PanelHarness, runResult, useBrowser } from './harness';

const session = useBrowser();

const row = (callId: string): string => `[data-testid="tool-call"][data-call-id="${callId}"]`;

interface ReplayOptions {
  /** Called after each notification is handed to the store (before the next one). */
  afterNotification?: (notification: RunNotification) => Promise<void>;
  /** Leave the run unfinished after this many messages. */
  stopAfter?: number;
}

/**
 * Plays a recorded run through the host store; approvals are answered by clicking the
 * button the recording says the user chose, in the page.
 */
async function replay(harness: PanelHarness, recorded: RecordedScenario, options: ReplayOptions = {}): Promise<void> {
  const { store, page } = harness;
  store.beginRun(recorded.params.runId, { prompt: recorded.params.prompt, sandboxRoot: recorded.params.sandboxRoot });
  let approvals = 0;
  const messages = recorded.messages.slice(0, options.stopAfter ?? recorded.messages.length);
  for (const message of messages) {
    if (message.kind === 'notification') {
      const notification = { method: message.method, params: message.params } as RunNotification;
      store.notify(notification);
      await options.afterNotification?.(notification);
      continue;
    }
    approvals += 1;
    const requestId = `approval-${approvals}`;
    const answer = store.requestApproval(requestId, message.params);
    await harness.delivered();
    const prompt = page.locator(`${row(message.params.callId)} [data-testid="approval"][data-state="pending"]`);
    await prompt.waitFor();
    const buttons: Record<string, string> = { allow: 'approve-allow', deny: 'approve-deny', allow_for_run: 'approve-allow-run' };
    const button = buttons[message.answer.decision];
    assert.ok(button !== undefined, `no button answers ${message.answer.decision}`);
    await prompt.locator(`button[data-testid="${button}"]`).click();
    const posted = await harness.waitForPosted((m) => m.type === 'approve' && m.requestId === requestId);
    assert.deepEqual(posted, { type: 'approve', requestId, decision: message.answer.decision });
    assert.equal(await answer, message.answer.decision);
  }
  if (options.stopAfter === undefined) {
    if (recorded.result !== null) store.settleRun(recorded.params.runId, recorded.result as RunResult);
    else store.failRun(recorded.params.runId, recorded.error?.message ?? 'failed');
  }
  await harness.delivered();
}

async function openPanel(): Promise<PanelHarness> {
  const harness = await PanelHarness.open(session.browser(), session.url());
  harness.onMessage = (message) => {
    if (message.type === 'approve') harness.store.answerApproval(message.requestId, message.decision);
    if (message.type === 'openRun') {
      const found = ['final_answer', 'max_iterations', 'cancelled', 'error'].map((name) => scenario(name as RecordedScenario['name']));
      const detail = found.find((s) => s.detail.runId === message.runId)?.detail;
      if (detail) harness.store.showStoredRun(detail);
    }
  };
  return harness;
}

describe('the runs panel', () => {
  it('streams the recorded run: rows, statuses, approvals, text and the end', async () => {
    const harness = await openPanel();
    const { page } = harness;
    await page.fill('textarea[data-testid="prompt"]', 'Summarise the TODOs');
    assert.equal(await page.isEnabled('button[data-testid="run"]'), true);
    await page.click('button[data-testid="run"]');
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'run'), { type: 'run', prompt: 'Summarise the TODOs' });

    const recorded = scenario('final_answer');
    let sawSpinner = false;
    await replay(harness, recorded, {
      afterNotification: async (notification) => {
        if (notification.method === 'cleveragents/toolCallStarted' && notification.params.callId === 'call_missing') {
          await harness.delivered();
          const missing = page.locator(row('call_missing'));
          await missing.waitFor();
          assert.equal(await missing.getAttribute('data-status'), 'running');
          assert.equal(await missing.getAttribute('data-tool-name'), 'read_file');
          assert.equal(await page.isEnabled('button[data-testid="stop"]'), true);
          assert.equal(await page.isEnabled('button[data-testid="run"]'), false);
          assert.match((await page.textContent('[data-testid="status"]')) ?? '', /^Running: iteration 1, 3 tool calls, 3 running\./);
          sawSpinner = true;
        }
      },
    });
    assert.ok(sawSpinner);
    await page.locator('[data-testid="run-end"]').waitFor();

    const rows = await page.$$eval('[data-testid="tool-call"]', (elements) =>
      elements.map((element) => [
        element.getAttribute('data-call-id'),
        element.getAttribute('data-tool-name'),
        element.getAttribute('data-status'),
        element.getAttribute('data-error-kind'),
      ]),
    );
    assert.deepEqual(rows, [
      ['call_list', 'list_dir', 'success', null],
      ['call_read', 'read_file', 'success', null],
      ['call_missing', 'read_file', 'failure', 'execution_error'],
      ['call_write', 'write_file', 'success', null],
      ['call_command', 'run_command', 'failure', 'denied'],
      ['call_edit', 'edit_file', 'success', null],
    ]);
    assert.equal(await page.locator('[data-testid="iteration"]').count(), 3);
    assert.deepEqual(await page.locator('[data-testid="assistant-text"]').allTextContents(), [
      'Let me look at the workspace first.',
      'I will write a summary and check the tests.',
      'I wrote summary.txt: notes.txt has two open TODOs. I did not run the command you denied.',
    ]);
    assert.equal(await page.getAttribute('[data-testid="run-end"]', 'data-stop-reason'), 'final_answer');
    assert.equal(await page.textContent('[data-testid="status"]'), 'Finished.');
    assert.match((await page.textContent(`${row('call_missing')} [data-testid="tool-call-duration"]`)) ?? '', /^\d+ ms$|^<1 ms$/);
    assert.equal(await page.textContent(`${row('call_command')} [data-testid="tool-call-error-kind"]`), 'denied');
    // Approvals stay in their rows, answered.
    assert.deepEqual(
      await page.$$eval('[data-testid="approval"]', (elements) => elements.map((element) => element.getAttribute('data-state'))),
      ['allow', 'deny', 'allow_for_run'],
    );
    assert.equal(await page.isEnabled('button[data-testid="stop"]'), false);

    // Expanding a failed row shows its inputs and its error, pretty-printed.
    const missing = page.locator(row('call_missing'));
    const toggle = missing.locator('[data-testid="tool-call-toggle"]');
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    assert.equal(await missing.locator('[data-testid="tool-call-inputs"]').count(), 0, 'details are drawn on demand');
    await toggle.click();
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    const inputs = JSON.parse((await missing.locator('[data-testid="tool-call-inputs"]').textContent()) ?? '{}') as Record<string, unknown>;
    assert.equal(inputs.path, 'missing.txt');
    assert.equal(await missing.locator('[data-testid="tool-call-output"]').textContent(), "execution_error: 'missing.txt' does not exist");
    // ... and a successful one its output.
    const read = page.locator(row('call_read'));
    await read.locator('[data-testid="tool-call-toggle"]').click();
    const output = JSON.parse((await read.locator('[data-testid="tool-call-output"]').textContent()) ?? '{}') as Record<string, unknown>;
    assert.equal(output.content, 'TODO: write the summary\nTODO: check the tests\n');
    await toggle.click();
    assert.equal(await missing.locator('[data-testid="tool-call-inputs"]').isVisible(), false);

    const file = await harness.screenshot('webview-final-answer.png');
    console.log(`screenshot: ${file}`);
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  for (const [name, reason, text] of [
    ['max_iterations', 'max_iterations', 'Stopped at the iteration limit (2).'],
    ['cancelled', 'cancelled', 'Stopped.'],
    ['error', 'error', 'Failed.'],
  ] as const) {
    it(`shows the ${name} end state`, async () => {
      const harness = await openPanel();
      const recorded = scenario(name);
      await replay(harness, recorded);
      const end = harness.page.locator('[data-testid="run-end"]');
      await end.waitFor();
      assert.equal(await end.getAttribute('data-stop-reason'), reason);
      assert.equal(await harness.page.textContent('[data-testid="status"]'), text);
      const statuses = await harness.page.$$eval('[data-testid="tool-call"]', (elements) =>
        elements.map((element) => [element.getAttribute('data-status'), element.getAttribute('data-error-kind')]),
      );
      const expected = notificationsOf(recorded).flatMap((n) =>
        n.method === 'cleveragents/toolCall' ? [[n.params.record.success ? 'success' : 'failure', n.params.record.errorKind]] : [],
      );
      assert.deepEqual(statuses, expected);
      if (name === 'error') {
        assert.equal(
          await harness.page.textContent('[data-testid="run-error"]'),
          'the replay script has 1 responses; iteration 2 asked for another',
        );
      }
      if (name === 'cancelled') {
        assert.equal(await harness.page.getAttribute(row('call_sleep'), 'data-error-kind'), 'cancelled');
      }
      await harness.screenshot(`webview-${name}.png`);
      assert.deepEqual(harness.consoleErrors, []);
      await harness.close();
    });
  }

  it('shows an error end when the run request fails before anything streams', async () => {
    const harness = await openPanel();
    harness.store.beginRun('never-started', { prompt: 'no key' });
    harness.store.failRun('never-started', 'provider \'anthropic\' is unavailable: no API key');
    await harness.delivered();
    const end = harness.page.locator('[data-testid="run-end"]');
    await end.waitFor();
    assert.equal(await end.getAttribute('data-stop-reason'), 'error');
    assert.match((await harness.page.textContent('[data-testid="run-error"]')) ?? '', /no API key/);
    await harness.close();
  });

  it('offers only allow (this once) and deny for a protected write, and says why', async () => {
    const harness = await openPanel();
    const { page, store } = harness;
    const recorded = scenario('final_answer');
    store.beginRun(recorded.params.runId, { prompt: recorded.params.prompt, sandboxRoot: recorded.params.sandboxRoot });
    const request = recorded.messages.find((message) => message.kind === 'request');
    assert.ok(request?.kind === 'request');
    const note = 'a protected path (.git/hooks/*): what is written there can run programs later';
    const answer = store.requestApproval('approval-p', { ...request.params, protected: true, note });
    await harness.delivered();
    const prompt = page.locator(`${row(request.params.callId)} [data-testid="approval"][data-state="pending"]`);
    await prompt.waitFor();
    assert.equal(await prompt.getAttribute('data-protected'), 'true');
    assert.deepEqual(await prompt.locator('button[data-decision]').evaluateAll((buttons) => buttons.map((b) => b.getAttribute('data-decision'))), [
      'allow',
      'deny',
    ]);
    assert.match((await prompt.locator('.approval-question').textContent()) ?? '', /wants to write a protected path\. Allow it this once\?$/);
    const why = (await prompt.locator('[data-testid="approval-protected"]').textContent()) ?? '';
    assert.match(why, /run programs later, outside the sandbox/);
    assert.ok(why.endsWith(note));
    await prompt.locator('button[data-testid="approve-allow"]').click();
    await harness.waitForPosted((m) => m.type === 'approve' && m.requestId === 'approval-p');
    assert.equal(await answer, 'allow');
    await page.locator(`${row(request.params.callId)} [data-testid="approval"][data-state="allow"]`).waitFor();
    assert.equal(await page.locator('[data-testid="approval-protected"]').count(), 0);
    await harness.close();
  });

  it('sends Stop for the active run', async () => {
    const harness = await openPanel();
    await replay(harness, scenario('cancelled'), { stopAfter: 3 });
    const stop = harness.page.locator('button[data-testid="stop"]');
    await stop.click();
    await harness.waitForPosted((message) => message.type === 'stop');
    await harness.close();
  });

  it('lists the history, reopens a conversation and continues it with Enter', async () => {
    const harness = await openPanel();
    const { page, store } = harness;
    store.setHistory(recordedRuns());
    await harness.delivered();
    const items = page.locator('[data-testid="history-item"]');
    await items.first().waitFor();
    assert.equal(await items.count(), recordedRuns().length);
    const target = scenario('max_iterations').detail.runId;
    await page.click(`[data-testid="history-item"][data-run-id="${target}"]`);
    await harness.waitForPosted((message) => message.type === 'openRun' && message.runId === target);
    await harness.delivered();
    await page.locator('[data-testid="run-end"][data-stop-reason="max_iterations"]').waitFor();
    assert.equal(await page.getAttribute(`[data-testid="history-item"][data-run-id="${target}"]`, 'aria-current'), 'true');
    assert.equal(await page.locator('[data-testid="tool-call"]').count(), 2);
    assert.equal(await page.isEnabled('button[data-testid="run"]'), false, 'no prompt yet');
    await page.fill('textarea[data-testid="prompt"]', 'And now the tests');
    assert.equal(await page.isEnabled('button[data-testid="run"]'), true);
    await page.press('textarea[data-testid="prompt"]', 'Enter');
    const posted = await harness.waitForPosted((message) => message.type === 'continue');
    assert.deepEqual(posted, { type: 'continue', prompt: 'And now the tests', runId: target });
    await harness.close();
  });

  it("groups a batch's runs, each opened like any run", async () => {
    const harness = await openPanel();
    const { page, store } = harness;
    const [first, ...others] = recordedRuns();
    assert.ok(first);
    const batchRun = (runId: string, taskId: string): RunSummary => ({
      ...first,
      runId,
      batch: { batchId: 'nightly', taskId, config: 'default' },
    });
    store.setHistory([batchRun('b-2', 'lint'), ...others, batchRun('b-1', 'bump')]);
    await harness.delivered();
    const group = page.locator('[data-testid="history-batch"][data-batch-id="nightly"]');
    await group.waitFor();
    assert.equal(await page.locator('[data-testid="history-batch"]').count(), 1);
    assert.match((await group.locator('summary').textContent()) ?? '', /Batch nightly · 2 runs/);
    const grouped = group.locator('[data-testid="history-item"]');
    assert.deepEqual(await grouped.evaluateAll((els) => els.map((e) => e.getAttribute('data-run-id'))), ['b-2', 'b-1']);
    // The group stands where its newest run would: first.
    const top = page.locator('[data-testid="history-list"] > li').first();
    assert.equal(await top.getAttribute('data-testid'), 'history-batch');
    assert.equal(await page.locator('[data-testid="history-item"]').count(), others.length + 2);
    await group.locator('summary').click();
    await page.click('[data-testid="history-item"][data-run-id="b-1"]');
    await harness.waitForPosted((message) => message.type === 'openRun' && message.runId === 'b-1');
    assert.match((await grouped.last().textContent()) ?? '', /bump@default/);
    await harness.close();
  });

  it('comes back whole after the page is recreated mid-run', async () => {
    const harness = await openPanel();
    const { page } = harness;
    const recorded = scenario('final_answer');
    // After call_edit started, before its approval.
    const editStart = startSeqOf(recorded, 'call_edit');
    const cut = recorded.messages.findIndex((m) => m.kind === 'notification' && m.params.seq === editStart) + 1;
    await replay(harness, recorded, { stopAfter: cut });
    await page.locator(row('call_edit')).waitFor();
    await page.click(`${row('call_missing')} [data-testid="tool-call-toggle"]`);
    await page.fill('textarea[data-testid="prompt"]', 'draft prompt');
    const before = await page.$$eval('[data-testid="tool-call"]', (els) => els.map((el) => `${el.getAttribute('data-call-id')}:${el.getAttribute('data-status')}`));

    await harness.reload();
    await page.locator(row('call_edit')).waitFor();
    const afterReload = await page.$$eval('[data-testid="tool-call"]', (els) => els.map((el) => `${el.getAttribute('data-call-id')}:${el.getAttribute('data-status')}`));
    assert.deepEqual(afterReload, before);
    assert.equal(await page.inputValue('textarea[data-testid="prompt"]'), 'draft prompt');
    assert.equal(await page.getAttribute(`${row('call_missing')} [data-testid="tool-call-toggle"]`, 'aria-expanded'), 'true');
    // The rest of the run streams into the recreated page.
    for (const message of recorded.messages.slice(cut)) {
      if (message.kind === 'notification') harness.store.notify({ method: message.method, params: message.params } as RunNotification);
    }
    harness.store.settleRun(recorded.params.runId, recorded.result as RunResult);
    await harness.delivered();
    await page.locator('[data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    assert.equal(await page.locator('[data-testid="tool-call"]').count(), 6);
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('works from the keyboard and tells screen readers what happens', async () => {
    const harness = await openPanel();
    const { page } = harness;
    // Focus order: prompt, Run, Continue, Stop (disabled buttons are skipped).
    await page.focus('textarea[data-testid="prompt"]');
    await page.keyboard.type('Keyboard run');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'run');
    await page.focus('textarea[data-testid="prompt"]');
    await page.keyboard.press('Control+Enter');
    await harness.waitForPosted((message) => message.type === 'run' && message.prompt === 'Keyboard run');

    const recorded = scenario('final_answer');
    const firstApproval = recorded.messages.findIndex((m) => m.kind === 'request');
    await replay(harness, recorded, { stopAfter: firstApproval });
    const request = recorded.messages[firstApproval];
    assert.ok(request?.kind === 'request');
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    const answer = harness.store.requestApproval('approval-k', request.params);
    await harness.delivered();
    const approval = page.locator('[data-testid="approval"][data-state="pending"]');
    await approval.waitFor();
    // The prompt takes the focus (not the prompt box's), is labelled, and is announced.
    await page.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'approval');
    const label = await approval.getAttribute('aria-labelledby');
    assert.match((await page.textContent(`#${label ?? 'none'}`)) ?? '', /^write_file wants to change the workspace\. Allow it\?$/);
    await page.waitForFunction(() => (document.querySelector('[data-testid="alert-announcer"]')?.textContent ?? '').startsWith('Approval needed: write_file'));
    // Its inputs are shown without asking.
    assert.equal(await page.getAttribute(`${row('call_write')} [data-testid="tool-call-toggle"]`, 'aria-expanded'), 'true');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'approve-allow');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'approve'), { type: 'approve', requestId: 'approval-k', decision: 'deny' });
    assert.equal(await answer, 'deny');

    assert.equal(await page.getAttribute('[data-testid="status"]', 'role'), 'status');
    assert.equal(await page.getAttribute('[data-testid="transcript"]', 'aria-labelledby'), 'run-heading');
    assert.equal(await page.getAttribute('[data-testid="transcript"]', 'aria-live'), 'polite');
    assert.equal(await page.getAttribute('[data-testid="transcript"]', 'aria-busy'), null, 'not busy once drawn');
    const unlabelled = await page.$$eval('button', (buttons) =>
      buttons.filter((button) => !(button.textContent ?? '').trim() && !button.getAttribute('aria-label')).length,
    );
    assert.equal(unlabelled, 0, 'every button has a name');
    const toggleName = await page.textContent(`${row('call_missing')} [data-testid="tool-call-toggle"]`);
    assert.match(toggleName ?? '', /read_file.*path: missing\.txt.*failed: execution_error/);
    await harness.close();
  });
});

describe('a run of 5,000 tool calls', () => {
  const count = 5000;

  /** Starts sampling frames in the page, and timing from the first host message of `timed` type. */
  async function sampleFrames(harness: PanelHarness, timed: 'runEvents' | 'state'): Promise<void> {
    await harness.page.evaluate((timedType) => {
      const w = window as unknown as {
        __frames: [number, number][];
        __sampling: boolean;
        __firstMessage: number;
        __lastMessage: number;
      };
      w.__frames = [];
      w.__sampling = true;
      w.__firstMessage = 0;
      w.__lastMessage = 0;
      // Timing starts when the run's data arrives (not with the small messages before it).
      window.addEventListener('message', (event: MessageEvent) => {
        const type = (event.data as { type?: string } | undefined)?.type;
        if (type !== timedType) return;
        if (w.__firstMessage === 0) w.__firstMessage = performance.now();
        w.__lastMessage = performance.now();
      });
      let last = performance.now();
      const tick = (now: number): void => {
        w.__frames.push([now, now - last]);
        last = now;
        if (w.__sampling) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    }, timed);
  }

  /** Waits for every row and the end; returns ms from the first message to that, and frame stats. */
  async function settled(harness: PanelHarness): Promise<Stats> {
    const [ms, lag] = await harness.page.evaluate(
      (expected) =>
        new Promise<[number, number]>((resolve) => {
          const check = (): void => {
            if (
              document.querySelectorAll('[data-testid="tool-call"]').length === expected &&
              document.querySelector('[data-testid="run-end"]') !== null
            ) {
              const w = window as unknown as { __firstMessage: number; __lastMessage: number };
              const now = performance.now();
              resolve([now - w.__firstMessage, now - w.__lastMessage]);
            } else {
              requestAnimationFrame(check);
            }
          };
          check();
        }),
      count,
    );
    const gaps = await harness.page.evaluate(() => {
      const w = window as unknown as { __frames: [number, number][]; __sampling: boolean; __firstMessage: number };
      w.__sampling = false;
      return w.__frames.filter(([at]) => at > w.__firstMessage).map(([, gap]) => gap);
    });
    const sorted = [...gaps].sort((a, b) => a - b);
    return {
      ms,
      lag,
      frames: gaps.length,
      longest: sorted.at(-1) ?? 0,
      p95: sorted[Math.floor(sorted.length * 0.95)] ?? 0,
    };
  }

  interface Stats {
    ms: number;
    /** From the last message's arrival to the last row drawn. */
    lag: number;
    frames: number;
    longest: number;
    p95: number;
  }

  const describeStats = (stats: Stats): string =>
    `${stats.ms.toFixed(0)} ms (${stats.lag.toFixed(0)} ms after the last message), ${stats.frames} frames, ` +
    `longest frame ${stats.longest.toFixed(0)} ms, p95 ${stats.p95.toFixed(0)} ms`;

  it('renders incrementally, streamed or in one burst, and reports its time', async () => {
    const stream = largeRun(count);
    const result = runResult('large-run', `Read ${count} files.`, count / 10);

    // 1. Streamed as a fast daemon sends it: the store forwards a batch per 16 ms tick.
    const streamed = await openPanel();
    await sampleFrames(streamed, 'runEvents');
    streamed.store.beginRun('large-run', { prompt: `Large run of ${count} tool calls` });
    const perTick = 200; // 12,500 notifications a second, above the daemon's measured rate
    for (let i = 0; i < stream.length; i += perTick) {
      for (const notification of stream.slice(i, i + perTick)) streamed.store.notify(notification);
      await new Promise((resolve) => setTimeout(resolve, 16));
    }
    streamed.store.settleRun('large-run', result);
    await streamed.delivered();
    const streamedStats = await settled(streamed);
    assert.equal(await streamed.page.locator('[data-testid="tool-call"][data-status="failure"]').count(), count / 25);
    assert.equal(await streamed.page.locator('[data-testid="tool-call"][data-status="running"]').count(), 0);
    // The view followed the run to its end (allowing the frames the last jumps take while
    // off-screen chunks get their real size: a few, more on a loaded machine).
    const atBottom = await streamed.page.evaluate(
      () =>
        new Promise<boolean>((resolve) => {
          const giveUp = performance.now() + 15_000;
          const check = (): void => {
            const scroller = document.querySelector('section.run') as HTMLElement;
            const end = document.querySelector('[data-testid="run-end"]') as HTMLElement;
            const box = scroller.getBoundingClientRect();
            const endBox = end.getBoundingClientRect();
            const inView = endBox.bottom <= box.bottom + 1 && endBox.top >= box.top;
            if (inView || performance.now() > giveUp) resolve(inView);
            else requestAnimationFrame(check);
          };
          check();
        }),
    );
    assert.equal(atBottom, true, 'the end of the run is in view');
    await streamed.screenshot('webview-5000-records.png');
    assert.deepEqual(streamed.consoleErrors, []);
    await streamed.close();

    // 2. The worst case: all of it in one message (a burst bigger than one tick).
    const burst = await openPanel();
    await sampleFrames(burst, 'runEvents');
    burst.store.beginRun('large-run', { prompt: `Large run of ${count} tool calls` });
    for (const notification of stream) burst.store.notify(notification);
    burst.store.settleRun('large-run', result);
    await burst.delivered();
    const burstStats = await settled(burst);

    // 3. Reopened: the page recreated, the whole run in one snapshot.
    await burst.reload();
    await sampleFrames(burst, 'state');
    await burst.sendState();
    const reopenStats = await settled(burst);
    const last = burst.page.locator(row(`call_${count - 1}`));
    await last.locator('[data-testid="tool-call-toggle"]').click();
    assert.match((await last.locator('[data-testid="tool-call-inputs"]').textContent()) ?? '', /file_4999\.py/);
    assert.deepEqual(burst.consoleErrors, []);
    await burst.close();

    console.log(
      `5,000-record run (${stream.length} notifications), in the page from the first message to the last row drawn:\n` +
        `  streamed in 16 ms batches: ${describeStats(streamedStats)}\n` +
        `  one burst:                 ${describeStats(burstStats)}\n` +
        `  reopened from a snapshot:  ${describeStats(reopenStats)}`,
    );
  });

  it('leaves a reader who scrolled up where they are, and follows again at the bottom', async () => {
    const harness = await openPanel();
    const { page, store } = harness;
    const stream = largeRun(900, 'scroll-run');
    const third = Math.floor(stream.length / 3);
    const scroller = 'section.run';
    const nextFrames = (): Promise<unknown> =>
      page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    const rowsAtLeast = (n: number): Promise<unknown> =>
      page.waitForFunction((min) => document.querySelectorAll('[data-testid="tool-call"]').length >= min, n);
    store.beginRun('scroll-run', { prompt: 'scrolling' });
    stream.slice(0, third).forEach((notification) => store.notify(notification));
    await harness.delivered();
    await rowsAtLeast(290);
    await nextFrames();
    await page.$eval(scroller, (element) => {
      element.scrollTop = 200;
    });
    await nextFrames(); // the scroll event, which turns following off, comes with a frame
    stream.slice(third, 2 * third).forEach((notification) => store.notify(notification));
    await harness.delivered();
    await rowsAtLeast(590);
    await nextFrames();
    assert.equal(await page.$eval(scroller, (element) => element.scrollTop), 200);

    await page.$eval(scroller, (element) => {
      element.scrollTop = element.scrollHeight;
    });
    await nextFrames();
    stream.slice(2 * third).forEach((notification) => store.notify(notification));
    await harness.delivered();
    await page.locator('[data-testid="run-end"]').waitFor();
    await nextFrames();
    const gap = await page.$eval(scroller, (element) => element.scrollHeight - element.clientHeight - element.scrollTop);
    assert.ok(gap <= 40, `the view followed to the end (${gap} px from the bottom)`);
    await harness.close();
  });
});
