// Several runs at once, tokens and cost in the header, and the composer's extras, in the real
// page (headless Chromium) behind the extension's real RunStore.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { RunResult } from '../../src/protocol';
import { largeRun } from '../fixtures/streams';
import { notifier, PanelHarness, runResult, useBrowser } from './harness';

const session = useBrowser();

describe('several runs at once', () => {
  it('lists the runs, switches between their transcripts and stops the one asked', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store, page } = harness;
    harness.onMessage = (message) => {
      if (message.type === 'openRun') store.display(message.runId);
      if (message.type === 'newConversation') store.display(null);
    };
    store.beginRun('run-a', { prompt: 'First task', sandboxRoot: '/w' });
    store.beginRun('run-b', { prompt: 'Second task', sandboxRoot: '/w' });
    const a = notifier(harness, 'run-a');
    const b = notifier(harness, 'run-b');
    a('cleveragents/iterationStarted', { iteration: 1 });
    a('cleveragents/textDelta', { iteration: 1, text: 'Working on **A**.' });
    b('cleveragents/iterationStarted', { iteration: 1 });
    b('cleveragents/textDelta', { iteration: 1, text: 'Working on B.' });
    await harness.delivered();
    const tabs = page.locator('[data-testid="run-tab"]');
    await page.locator('[data-testid="run-tab"][data-run-id="run-b"][aria-current="true"]').waitFor();
    assert.deepEqual(await tabs.evaluateAll((els) => els.map((e) => [e.getAttribute('data-run-id'), e.getAttribute('data-state')])), [
      ['run-a', 'running'],
      ['run-b', 'running'],
    ]);
    assert.equal(await page.textContent('[data-testid="assistant-text"]'), 'Working on B.');
    assert.equal(await page.isEnabled('button[data-testid="run"]'), false, 'no prompt typed yet');
    await page.fill('textarea[data-testid="prompt"]', 'A third one');
    assert.equal(await page.isEnabled('button[data-testid="run"]'), false, 'the turn on display is still running');
    await page.click('button[data-testid="new-conversation"]');
    await page.locator('[data-testid="run-heading"]', { hasText: 'New conversation' }).waitFor();
    assert.equal(await page.isEnabled('button[data-testid="run"]'), true, 'a conversation may start while others go');

    await tabs.first().click();
    await page.locator('[data-testid="run-tab"][data-run-id="run-a"][aria-current="true"]').waitFor();
    assert.equal(await page.textContent('[data-testid="assistant-text"]'), 'Working on A.');
    // Streaming into the run not on display reaches it when it is shown again.
    b('cleveragents/textDelta', { iteration: 1, text: ' Still on B.' });
    await page.locator('button[data-testid="stop"]').click();
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'stop'), { type: 'stop', runId: 'run-a' });
    await page.locator('[data-testid="run-tab-stop"][data-run-id="run-b"]').click();
    await harness.waitForPosted((m) => m.type === 'stop' && m.runId === 'run-b');

    store.settleRun('run-a', { ...runResult('run-a', 'A done'), stopReason: 'cancelled' });
    await harness.delivered();
    await page.locator('[data-testid="run-tab"][data-run-id="run-a"][data-state="cancelled"]').waitFor();
    await page.locator('[data-testid="run-tab"][data-run-id="run-b"]').click();
    await page.locator('[data-testid="assistant-text"]', { hasText: 'Working on B. Still on B.' }).waitFor();
    await harness.screenshot('webview-several-runs.png');
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('shows tokens and cost from usage notifications, and "—" when the daemon sends none', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store, page } = harness;
    store.beginRun('old-daemon', { prompt: 'Old', sandboxRoot: '/w' });
    await harness.delivered();
    await page.locator('[data-testid="run-usage"]').waitFor();
    assert.equal(await page.textContent('[data-testid="run-tokens"]'), '—');
    assert.equal(await page.textContent('[data-testid="run-cost"]'), '—');
    store.settleRun('old-daemon', runResult('old-daemon', 'done'));

    store.beginRun('priced', { prompt: 'Priced', sandboxRoot: '/w' });
    const send = notifier(harness, 'priced');
    send('cleveragents/iterationStarted', { iteration: 1 });
    const call = { inputTokens: 1200, outputTokens: 300, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.0081 };
    send('cleveragents/usage', { iteration: 1, usage: call, total: call });
    send('cleveragents/iterationStarted', { iteration: 2 });
    const total = { inputTokens: 2600, outputTokens: 450, cacheReadTokens: 1000, cacheWriteTokens: 0, costUsd: 0.0153 };
    send('cleveragents/usage', { iteration: 2, usage: { ...total, inputTokens: 1400, outputTokens: 150 }, total });
    await harness.delivered();
    await page.locator('[data-testid="run-cost"]', { hasText: '$0.02' }).waitFor();
    assert.equal(await page.textContent('[data-testid="run-tokens"]'), '2,600 in · 450 out (1,000 cached)');
    // A result without a cost (an older daemon) keeps the streamed one.
    store.settleRun('priced', { ...runResult('priced', 'done'), usage: { inputTokens: 2600, outputTokens: 450 } as RunResult['usage'] });
    await harness.delivered();
    assert.equal(await page.textContent('[data-testid="run-cost"]'), '$0.02');
    await harness.screenshot('webview-cost-header.png');
    await harness.close();
  });

  it('sends the picked options, the attached context and @file mentions', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page } = harness;
    harness.onMessage = (message) => {
      if (message.type === 'findFiles') {
        void harness.send({ type: 'files', query: message.query, paths: ['src/app.ts', 'src/app.test.ts'].filter((p) => p.includes(message.query)) });
      }
      if (message.type === 'mention') {
        void harness.send({
          type: 'context',
          item: { path: `/w/${message.path}`, text: null, startLine: null, endLine: null, label: message.path },
        });
      }
    };
    await harness.send({
      type: 'options',
      options: {
        provider: 'offline',
        model: '',
        automationProfile: 'ask',
        providers: ['offline', 'replay', 'anthropic', 'openai'],
        profiles: ['read-only', 'ask', 'auto-edit', 'full-auto'],
        defaults: { provider: 'offline', model: '', automationProfile: 'ask' },
      },
    });
    await harness.delivered();
    await page.selectOption('[data-testid="pick-provider"]', 'anthropic');
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'setOptions'), {
      type: 'setOptions',
      options: { provider: 'anthropic', model: '', automationProfile: 'ask' },
    });
    await harness.send({
      type: 'context',
      item: { path: '/w/notes.md', text: 'line two', startLine: 2, endLine: 2, label: 'notes.md:2-2' },
    });
    await harness.delivered();
    const prompt = page.locator('textarea[data-testid="prompt"]');
    await prompt.click();
    await prompt.pressSequentially('Explain @app.t');
    await page.locator('[data-testid="mention"]').first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('[data-testid="context-chip"]', { hasText: 'src/app.ts' }).waitFor();
    assert.equal(await prompt.inputValue(), 'Explain @src/app.ts ');
    await page.keyboard.press('Control+Enter');
    const run = await harness.waitForPosted((m) => m.type === 'run');
    assert.deepEqual(run, {
      type: 'run',
      prompt: 'Explain @src/app.ts',
      context: [
        { path: '/w/notes.md', text: 'line two', startLine: 2, endLine: 2, label: 'notes.md:2-2' },
        { path: '/w/src/app.ts', text: null, startLine: null, endLine: null, label: 'src/app.ts' },
      ],
    });
    await harness.screenshot('webview-composer.png');
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('stays smooth with 3 runs streaming 5,000 records each, and reports its frames', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store, page } = harness;
    harness.onMessage = (message) => {
      if (message.type === 'openRun') store.display(message.runId);
    };
    const count = 5000;
    const ids = ['big-1', 'big-2', 'big-3'];
    const streams = ids.map((id) => largeRun(count, id));
    for (const id of ids) store.beginRun(id, { prompt: `Large run ${id}`, sandboxRoot: '/w' });
    await harness.delivered();
    await page.evaluate(() => {
      const w = window as unknown as { __gaps: number[]; __sampling: boolean };
      w.__gaps = [];
      w.__sampling = true;
      let last = performance.now();
      const tick = (now: number): void => {
        w.__gaps.push(now - last);
        last = now;
        if (w.__sampling) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    });
    const started = Date.now();
    const perTick = 200;
    const longest = Math.max(...streams.map((s) => s.length));
    for (let i = 0; i < longest; i += perTick) {
      for (const stream of streams) for (const n of stream.slice(i, i + perTick)) store.notify(n);
      await new Promise((resolve) => setTimeout(resolve, 16));
    }
    for (const id of ids) store.settleRun(id, runResult(id, 'done'));
    await harness.delivered();
    // The displayed run (the last started) has every row; the others are one click away.
    await page.waitForFunction((expected) => document.querySelectorAll('[data-testid="tool-call"]').length === expected, count);
    await page.locator('[data-testid="run-end"]').waitFor();
    const elapsed = Date.now() - started;
    const gaps = await page.evaluate(() => {
      const w = window as unknown as { __gaps: number[]; __sampling: boolean };
      w.__sampling = false;
      return w.__gaps;
    });
    const sorted = [...gaps].sort((x, y) => x - y);
    const p95 = sorted[Math.floor(sorted.length * 0.95)] ?? 0;
    console.log(
      `3 concurrent runs × ${count} records: ${elapsed} ms to the last row, ${gaps.length} frames, ` +
        `longest frame ${(sorted.at(-1) ?? 0).toFixed(0)} ms, p95 ${p95.toFixed(0)} ms`,
    );
    // Switching to another finished run draws it from its snapshot.
    await page.locator('[data-testid="run-tab"][data-run-id="big-1"]').click();
    await page.locator('[data-testid="run-tab"][data-run-id="big-1"][aria-current="true"]').waitFor();
    await page.waitForFunction((expected) => document.querySelectorAll('[data-testid="tool-call"]').length === expected, count);
    assert.equal(await page.locator('[data-testid="tool-call"][data-status="running"]').count(), 0);
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });
});
