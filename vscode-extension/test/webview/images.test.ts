// Images in the prompt box, in the real page (headless Chromium) behind the extension's real
// RunStore: a pasted and a dropped image become chips with a thumbnail and a remove button,
// go with the prompt as base64, clear once the run starts, and show as thumbnails in the run;
// a stored run's evicted image shows as its name.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { RunDetail } from '../../src/protocol';
import type { WebviewMessage } from '../../src/shared/messages';
import { notifier, PanelHarness, runResult, useBrowser } from './harness';

const session = useBrowser();

/** Paste (into the prompt box) or drop (on the composer) an image the page's canvas encodes. */
async function attach(harness: PanelHarness, how: 'paste' | 'drop', type: string, name: string): Promise<void> {
  await harness.page.evaluate(
    async ({ how, type, name }) => {
      const canvas = document.createElement('canvas');
      canvas.width = 24;
      canvas.height = 16;
      const context = canvas.getContext('2d');
      if (context === null) throw new Error('no 2d canvas');
      context.fillStyle = '#c03030';
      context.fillRect(0, 0, 24, 16);
      const blob = await new Promise<Blob | null>((done) => canvas.toBlob(done, type));
      if (blob === null) throw new Error(`the canvas cannot encode ${type}`);
      const transfer = new DataTransfer();
      transfer.items.add(new File([blob], name, { type }));
      if (how === 'paste') {
        const box = document.querySelector('textarea[data-testid="prompt"]');
        box?.dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }));
      } else {
        const form = document.querySelector('[data-testid="composer"]');
        form?.dispatchEvent(new DragEvent('dragover', { dataTransfer: transfer, bubbles: true, cancelable: true }));
        form?.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
      }
    },
    { how, type, name },
  );
}

async function chips(harness: PanelHarness): Promise<{ name: string; loaded: boolean }[]> {
  return harness.page.locator('[data-testid="image-chip"]').evaluateAll((items) =>
    items.map((item) => {
      const image = item.querySelector('img');
      return { name: item.textContent?.replace('×', '') ?? '', loaded: image !== null && image.complete && image.naturalWidth === 24 };
    }),
  );
}

describe('images in the prompt', () => {
  it('pasted and dropped images become chips, go with the prompt and show in the run', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page, store } = harness;
    await page.fill('textarea[data-testid="prompt"]', 'What do these show?');
    await attach(harness, 'paste', 'image/png', 'clip.png');
    await attach(harness, 'drop', 'image/webp', 'shot.webp');
    await attach(harness, 'drop', 'image/jpeg', 'photo.jpg');
    await page.locator('[data-testid="image-chip"]').nth(2).waitFor();
    await page.waitForFunction(() =>
      Array.from(document.querySelectorAll<HTMLImageElement>('[data-testid="image-chip-thumb"]')).every((i) => i.complete),
    );
    assert.deepEqual(await chips(harness), [
      { name: 'clip.png', loaded: true },
      { name: 'shot.webp', loaded: true },
      { name: 'photo.jpg', loaded: true },
    ]);
    assert.equal(await page.inputValue('textarea[data-testid="prompt"]'), 'What do these show?', 'no file name pasted as text');
    await harness.screenshot('webview-image-chips.png');

    await page.locator('[data-testid="image-remove"][aria-label="Remove shot.webp"]').click();
    assert.deepEqual(
      (await chips(harness)).map((chip) => chip.name),
      ['clip.png', 'photo.jpg'],
    );

    await page.click('button[data-testid="run"]');
    const sent = (await harness.waitForPosted((m) => m.type === 'run')) as Extract<WebviewMessage, { type: 'run' }>;
    assert.equal(sent.prompt, 'What do these show?');
    assert.deepEqual(
      sent.images?.map((image) => [image.name, image.mediaType]),
      [
        ['clip.png', 'image/png'],
        ['photo.jpg', 'image/jpeg'],
      ],
    );
    const png = Buffer.from(sent.images?.[0]?.data ?? '', 'base64');
    assert.deepEqual([...png.subarray(1, 4)], [...Buffer.from('PNG')], 'the bytes, not a name');

    // The host starts the run (the real RunStore) and says so: the chips are used up.
    store.beginRun('with-images', { prompt: sent.prompt, sandboxRoot: '/w', images: (sent.images ?? []).map((i) => ({ ...i })) });
    await harness.send({ type: 'activeRun', runId: 'with-images' });
    await harness.delivered();
    await page.locator('[data-testid="run-image"]').nth(1).waitFor();
    assert.equal(await page.locator('[data-testid="image-chip"]').count(), 0);
    assert.deepEqual(
      await page.locator('[data-testid="run-image"]').evaluateAll((items) => items.map((i) => i.getAttribute('alt'))),
      ['clip.png', 'photo.jpg'],
    );
    await harness.close();
  });

  it('sends an image alone as the prompt', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page } = harness;
    assert.equal(await page.isDisabled('button[data-testid="run"]'), true, 'nothing to send yet');
    await attach(harness, 'paste', 'image/png', 'error.png');
    await page.locator('[data-testid="image-chip"]').waitFor();
    await page.locator('button[data-testid="run"]:enabled').waitFor();
    await page.click('button[data-testid="run"]');
    const sent = (await harness.waitForPosted((m) => m.type === 'run')) as Extract<WebviewMessage, { type: 'run' }>;
    assert.equal(sent.prompt, '');
    assert.deepEqual(sent.images?.map((image) => image.name), ['error.png']);
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('keeps each turn\'s images under its prompt in the thread, and takes them from runStarted', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page, store } = harness;
    const gif = 'R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=';
    store.beginRun('first', { prompt: 'What is this?', sandboxRoot: '/w', images: [{ name: 'dot.gif', mediaType: 'image/gif', data: gif }] });
    await harness.send({ type: 'activeRun', runId: 'first' });
    const first = notifier(harness, 'first');
    first('cleveragents/iterationStarted', { iteration: 1 });
    first('cleveragents/textDelta', { iteration: 1, text: 'A dot.' });
    store.settleRun('first', runResult('first', 'A dot.'));
    // The next turn was started by another client: its images come with its runStarted.
    store.beginRun('second', { prompt: '', sandboxRoot: '/w', continuedFrom: 'first' });
    notifier(harness, 'second')('cleveragents/runStarted', {
      prompt: '',
      sandboxRoot: '/w',
      automationProfile: 'ask',
      maxIterations: 25,
      provider: 'anthropic',
      model: null,
      continuedFrom: 'first',
      instructions: [],
      images: [{ name: 'other.gif', mediaType: 'image/gif', width: 1, height: 1, sizeBytes: 35, data: gif }],
    });
    await harness.send({ type: 'activeRun', runId: 'second' });
    await harness.delivered();
    const earlier = page.locator('[data-testid="thread-before"] [data-testid="turn-images"] [data-testid="run-image"]');
    await earlier.waitFor();
    assert.deepEqual(await earlier.evaluateAll((items) => items.map((i) => i.getAttribute('alt'))), ['dot.gif']);
    await page.locator('[data-testid="run-images"] [data-testid="run-image"][alt="other.gif"]').waitFor();
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('shows a stored run\'s images again, an evicted one by name', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page, store } = harness;
    const gif = 'R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=';
    const detail: RunDetail = {
      runId: 'stored',
      prompt: 'Look at these',
      status: 'finished',
      startedAt: 1_700_000_000,
      finishedAt: 1_700_000_001,
      iterations: 1,
      toolCallCount: 0,
      sandboxRoot: '/w',
      automationProfile: 'ask',
      continuedFrom: null,
      maxIterations: 25,
      content: 'A dot.',
      stopReason: 'final_answer',
      error: null,
      errorType: null,
      usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
      toolCallHistory: [],
      messages: [{ role: 'assistant', text: 'A dot.', toolCalls: [], results: null }],
      kind: 'run',
      plan: null,
      restoredRunId: null,
      restoredIteration: null,
      batch: null,
      checkpoints: [],
      changedFiles: [],
      checkpointWarning: null,
      iterationUsage: [],
      resources: [],
      images: [
        { name: 'dot.gif', mediaType: 'image/gif', width: 1, height: 1, sizeBytes: 35, data: gif },
        { name: 'old.png', mediaType: 'image/png', width: 800, height: 600, sizeBytes: 90_000, data: null },
      ],
    };
    store.showStoredRun(detail);
    await harness.delivered();
    await page.locator('[data-testid="run-image"][alt="dot.gif"]').waitFor();
    assert.equal(await page.locator('.run-image-gone').textContent(), 'old.png (no longer stored)');
    await harness.close();
  });
});
