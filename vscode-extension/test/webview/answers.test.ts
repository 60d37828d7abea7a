// Answers people can read: markdown in the real page (headless Chromium), sanitized, with code
// blocks that copy and paths that open, fed through the extension's real RunStore.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import type { RunNotification } from '../../src/shared/runState';
import { PanelHarness, useBrowser } from './harness';

const session = useBrowser();

/** A run whose only output is `text`, streamed as the daemon does (split in two deltas). */
function streamText(harness: PanelHarness, runId: string, text: string): void {
  const { store } = harness;
  store.beginRun(runId, { prompt: 'Explain', sandboxRoot: '/workspace' });
  let seq = 0;
  const send = (notification: Omit<RunNotification, 'params'> & { params: object }): void => {
    seq += 1;
    store.notify({ ...notification, params: { ...notification.params, runId, seq } } as RunNotification);
  };
  send({ method: 'cleveragents/iterationStarted', params: { iteration: 1 } });
  const half = Math.floor(text.length / 2);
  send({ method: 'cleveragents/textDelta', params: { iteration: 1, text: text.slice(0, half) } });
  send({ method: 'cleveragents/textDelta', params: { iteration: 1, text: text.slice(half) } });
}

describe('answers as markdown', () => {
  it('renders headings, lists, code blocks with Copy, and paths that open at their line', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page } = harness;
    const text = [
      '## Summary',
      '',
      'I changed **two** files:',
      '',
      '- `src/app.ts` (the entry point)',
      '- the tests in tests/test_app.py:42',
      '',
      '```python',
      'def hello():',
      '    return "<b>hi</b>"',
      '```',
      '',
      'See [the docs](https://example.com/docs) and [a trap](javascript:alert(1)).',
    ].join('\n');
    streamText(harness, 'md-run', text);
    await harness.delivered();
    const answer = page.locator('[data-testid="assistant-text"]');
    await answer.locator('h2', { hasText: 'Summary' }).waitFor();
    assert.equal(await answer.locator('strong').textContent(), 'two');
    assert.equal(await answer.locator('li').count(), 2);

    const code = answer.locator('[data-testid="code-block"] pre code');
    assert.equal(await code.textContent(), 'def hello():\n    return "<b>hi</b>"\n');
    assert.equal(await code.getAttribute('class'), 'language-python');
    assert.equal(await answer.locator('[data-testid="code-block"] b').count(), 0, 'code stays text');
    await answer.locator('[data-testid="copy-code"]').click();
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'copy'), {
      type: 'copy',
      text: 'def hello():\n    return "<b>hi</b>"\n',
    });
    assert.equal(await answer.locator('[data-testid="copy-code"]').textContent(), 'Copied');

    const paths = answer.locator('[data-testid="path-link"]');
    assert.deepEqual(await paths.evaluateAll((links) => links.map((l) => [l.getAttribute('data-path'), l.getAttribute('data-line')])), [
      ['src/app.ts', null],
      ['tests/test_app.py', '42'],
    ]);
    await paths.nth(1).click();
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'openFile'), {
      type: 'openFile',
      path: 'tests/test_app.py',
      line: 42,
      runId: 'md-run',
    });
    // The keyboard opens a path too.
    await paths.nth(0).focus();
    await page.keyboard.press('Enter');
    await harness.waitForPosted((m) => m.type === 'openFile' && m.path === 'src/app.ts');

    const links = answer.locator('[data-testid="md-link"]');
    assert.equal(await links.count(), 2);
    assert.equal(await links.nth(0).getAttribute('href'), 'https://example.com/docs');
    assert.equal(await links.nth(1).getAttribute('href'), null, 'a javascript: link loses its href');
    await links.nth(0).click();
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'openLink'), {
      type: 'openLink',
      href: 'https://example.com/docs',
    });
    await links.nth(1).click();
    assert.equal(harness.posted.filter((m) => m.type === 'openLink').length, 1);
    assert.equal(page.url(), session.url(), 'the page never navigates');
    await harness.screenshot('webview-markdown.png');
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('never turns model text into live HTML: scripts, handlers, images, styles, iframes', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { page } = harness;
    await page.evaluate(() => {
      (window as unknown as { __pwned: number }).__pwned = 0;
    });
    const hostile = [
      'Hello <script>window.__pwned = 1</script>',
      '<img src=x onerror="window.__pwned = 2">',
      '<iframe src="https://example.com"></iframe><style>body{display:none}</style>',
      '<a href="javascript:window.__pwned=3" onclick="window.__pwned=4">click</a>',
      '![alt](https://example.com/x.png) <svg onload="window.__pwned=5"></svg>',
      '[x](data:text/html,<script>1</script>) <div style="position:fixed" onmouseover="window.__pwned=6">hover</div>',
    ].join('\n\n');
    streamText(harness, 'hostile-run', hostile);
    await harness.delivered();
    const answer = page.locator('[data-testid="assistant-text"]');
    await answer.getByText('Hello').waitFor();
    const live = await answer.evaluate((element) => ({
      elements: [...element.querySelectorAll('script, img, iframe, style, svg, div[style], [onerror], [onclick], [onload], [onmouseover]')].length,
      hrefs: [...element.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')),
      text: element.textContent ?? '',
    }));
    assert.equal(live.elements, 0);
    assert.deepEqual(live.hrefs, []);
    // Raw HTML is shown as text, so the reader sees what the model wrote.
    assert.match(live.text, /<script>window.__pwned = 1<\/script>/);
    assert.match(live.text, /\[image: alt\]/);
    await answer.getByText('hover').hover();
    await answer.getByText('click').click();
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned: number }).__pwned), 0);
    assert.deepEqual(harness.consoleErrors, []);
    await harness.close();
  });

  it('links the path of a file tool call in its row', async () => {
    const harness = await PanelHarness.open(session.browser(), session.url());
    const { store, page } = harness;
    store.beginRun('row-run', { prompt: 'Read', sandboxRoot: '/workspace' });
    store.notify({
      method: 'cleveragents/toolCallStarted',
      params: { runId: 'row-run', seq: 1, callId: 'c1', toolName: 'read_file', iteration: 1, inputs: { path: 'docs/guide.md' } },
    } as RunNotification);
    await harness.delivered();
    const link = page.locator('[data-testid="tool-call"][data-call-id="c1"] [data-testid="path-link"]');
    await link.click();
    assert.deepEqual(await harness.waitForPosted((m) => m.type === 'openFile'), {
      type: 'openFile',
      path: 'docs/guide.md',
      line: null,
      runId: 'row-run',
    });
    await harness.close();
  });
});
