// Loads the real webview page (the extension's HTML, dist/webview.js, media/webview.css) in
// headless Chromium, behind a stand-in for VS Code's side of the webview boundary:
// `acquireVsCodeApi()` records what the page posts (and keeps its state across reloads, as
// VS Code does), and messages from the "host" arrive as window `message` events. The host
// side is the extension's real RunStore.

import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { after, before } from 'node:test';

import { chromium, type Browser, type Page } from 'playwright-core';

import { RunStore } from '../../src/host/runStore';
import { renderWebviewHtml } from '../../src/host/webviewHtml';
import type { RunResult } from '../../src/protocol';
import type { HostMessage, WebviewMessage } from '../../src/shared/messages';
import type { RunNotification } from '../../src/shared/runState';

// Tests run from out/test/webview.
export const EXTENSION_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const ARTIFACTS = join(EXTENSION_ROOT, 'artifacts');

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.map': 'application/json',
};

/** VS Code's Dark Modern colours for the variables the page uses, for realistic screenshots. */
const DARK_THEME: Record<string, string> = {
  '--vscode-font-family': 'system-ui, "Segoe UI", Ubuntu, sans-serif',
  '--vscode-font-size': '13px',
  '--vscode-editor-font-family': '"Droid Sans Mono", monospace',
  '--vscode-editor-font-size': '12px',
  '--vscode-foreground': '#cccccc',
  '--vscode-descriptionForeground': '#9d9d9d',
  '--vscode-errorForeground': '#f85149',
  '--vscode-sideBar-background': '#181818',
  '--vscode-input-background': '#313131',
  '--vscode-input-foreground': '#cccccc',
  '--vscode-input-border': '#3c3c3c',
  '--vscode-input-placeholderForeground': '#989898',
  '--vscode-focusBorder': '#0078d4',
  '--vscode-button-background': '#0078d4',
  '--vscode-button-foreground': '#ffffff',
  '--vscode-button-hoverBackground': '#026ec1',
  '--vscode-button-secondaryBackground': '#313131',
  '--vscode-button-secondaryForeground': '#cccccc',
  '--vscode-button-secondaryHoverBackground': '#3c3c3c',
  '--vscode-button-border': '#ffffff12',
  '--vscode-list-hoverBackground': '#2a2d2e',
  '--vscode-list-activeSelectionBackground': '#04395e',
  '--vscode-textLink-foreground': '#4daafc',
  '--vscode-widget-border': '#313131',
  '--vscode-textCodeBlock-background': '#2b2b2b',
  '--vscode-testing-iconPassed': '#73c991',
  '--vscode-testing-iconFailed': '#f14c4c',
  '--vscode-editorWarning-foreground': '#cca700',
  '--vscode-inputValidation-warningBackground': '#352a05',
  '--vscode-inputValidation-warningBorder': '#b89500',
  '--vscode-inputValidation-errorBackground': '#5a1d1d',
  '--vscode-inputValidation-errorBorder': '#be1100',
};

export interface PageServer {
  url: string;
  close(): Promise<void>;
}

/** Serves the page the way the extension builds it, with this origin as `cspSource`. */
export async function servePage(): Promise<PageServer> {
  let origin = '';
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path === '/favicon.ico') {
      response.writeHead(204);
      response.end();
      return;
    }
    if (path === '/') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(
        renderWebviewHtml({
          cspSource: origin,
          nonce: 'test-nonce-0123456789abcdef',
          scriptUri: `${origin}/dist/webview.js`,
          styleUri: `${origin}/media/webview.css`,
        }),
      );
      return;
    }
    const [, folder, ...rest] = path.split('/');
    if ((folder === 'dist' || folder === 'media') && rest.length > 0 && !rest.includes('..')) {
      try {
        const body = readFileSync(join(EXTENSION_ROOT, folder, ...rest));
        response.writeHead(200, { 'content-type': CONTENT_TYPES[extname(path)] ?? 'application/octet-stream' });
        response.end(body);
        return;
      } catch {
        // fall through to 404
      }
    }
    response.writeHead(404);
    response.end();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: `${origin}/`,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
}

/** The page plus a host made of the real RunStore; `posted` is every message the page sent. */
export class PanelHarness {
  readonly store = new RunStore();
  readonly posted: WebviewMessage[] = [];
  readonly consoleErrors: string[] = [];
  private delivery: Promise<unknown> = Promise.resolve();
  private readonly deliveryErrors: unknown[] = [];
  /** Like the view provider: nothing is sent until the page says `ready`. */
  private ready = false;
  private readonly waiters: { match: (message: WebviewMessage) => boolean; resolve: (m: WebviewMessage) => void }[] = [];
  /** What the host does with a message beyond recording it (set by each test). */
  onMessage: (message: WebviewMessage) => void = () => undefined;

  private constructor(readonly page: Page) {}

  static async open(browser: Browser, url: string, viewport = { width: 420, height: 900 }): Promise<PanelHarness> {
    const page = await browser.newPage({ viewport });
    const harness = new PanelHarness(page);
    page.on('console', (message) => {
      if (message.type() === 'error') harness.consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => harness.consoleErrors.push(String(error)));
    await page.exposeFunction('__panelPosted', (message: WebviewMessage) => harness.received(message));
    await page.addInitScript((theme: Record<string, string>) => {
      const key = 'vscode-webview-state';
      (window as unknown as { acquireVsCodeApi: () => unknown }).acquireVsCodeApi = () => ({
        postMessage: (message: unknown) => {
          void (window as unknown as { __panelPosted: (m: unknown) => Promise<void> }).__panelPosted(message);
        },
        getState: () => {
          const saved = sessionStorage.getItem(key);
          return saved === null ? undefined : (JSON.parse(saved) as unknown);
        },
        setState: (state: unknown) => sessionStorage.setItem(key, JSON.stringify(state)),
      });
      // VS Code sets the theme's variables on <html> the same way (CSSOM, allowed by the CSP).
      const applyTheme = (): void => {
        for (const [name, value] of Object.entries(theme)) {
          document.documentElement.style.setProperty(name, value);
        }
      };
      if (document.documentElement !== null) applyTheme();
      else document.addEventListener('readystatechange', applyTheme, { once: true });
    }, DARK_THEME);
    harness.store.onMessage((message) => harness.send(message));
    // As the extension reports once the daemon has started.
    harness.store.setDaemon({ state: 'ready', message: 'Daemon ready: cleveragents 0.1.0, Python /usr/bin/python3' });
    await page.goto(url);
    await harness.waitForPosted((message) => message.type === 'ready');
    await harness.delivered(); // the state sent in answer to `ready`
    return harness;
  }

  /** Posts a host message into the page, in order with every other one. */
  send(message: HostMessage): Promise<unknown> {
    if (!this.ready) {
      return this.delivery; // the page rebuilds itself from the store when it says `ready`
    }
    this.delivery = this.delivery.then(() =>
      this.page
        .evaluate((data) => {
          window.postMessage(data, '*');
        }, message)
        .catch((error: unknown) => {
          // Kept for delivered() to throw: a rejection nobody awaits would fail a later test.
          this.deliveryErrors.push(error);
        }),
    );
    return this.delivery;
  }

  /** Stops sending (as the view provider does for a disposed view), then closes the page. */
  async close(): Promise<void> {
    this.ready = false;
    await this.delivery;
    await this.page.close();
  }

  /** Reloads the page as VS Code does when a hidden view is shown again. */
  async reload(): Promise<void> {
    this.ready = false;
    await this.delivery;
    const readyCount = this.posted.filter((message) => message.type === 'ready').length;
    await this.page.reload();
    await this.waitForPosted(
      (message) => message.type === 'ready' && this.posted.filter((m) => m.type === 'ready').length > readyCount,
    );
    await this.delivered();
  }

  /** Waits until everything sent so far has been delivered. */
  async delivered(): Promise<void> {
    this.store.flush();
    await this.delivery;
    const [error] = this.deliveryErrors.splice(0);
    if (error !== undefined) throw error;
  }

  /** What the extension's view provider does on `ready`: the whole state. */
  sendState(): Promise<unknown> {
    return this.send({ type: 'state', state: this.store.viewState() });
  }

  waitForPosted(match: (message: WebviewMessage) => boolean): Promise<WebviewMessage> {
    const seen = this.posted.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  async screenshot(name: string): Promise<string> {
    mkdirSync(ARTIFACTS, { recursive: true });
    const file = join(ARTIFACTS, name);
    await this.page.screenshot({ path: file, fullPage: true });
    return file;
  }

  private received(message: WebviewMessage): void {
    this.posted.push(message);
    if (message.type === 'ready') {
      this.ready = true;
      void this.sendState();
    }
    this.onMessage(message);
    for (const waiter of [...this.waiters]) {
      if (waiter.match(message)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  }
}

/** One page server and one browser for a test file (started before its tests, closed after). */
export function useBrowser(): { browser: () => Browser; url: () => string } {
  let browser: Browser | undefined;
  let server: PageServer | undefined;
  before(async () => {
    server = await servePage();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
  const need = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useBrowser() is used before its before() hook ran');
    return value;
  };
  return { browser: () => need(browser), url: () => need(server).url };
}

/** Sends `runId`'s notifications into the harness's store, numbering them as the daemon does. */
export function notifier(harness: PanelHarness, runId: string): (method: string, params: object) => void {
  let seq = 0;
  return (method, params) => {
    seq += 1;
    harness.store.notify({ method, params: { ...params, runId, seq } } as RunNotification);
  };
}

/** A finished run's result that changed nothing and reported no tokens. */
export function runResult(runId: string, content: string, iterations = 1): RunResult {
  return {
    runId,
    content,
    stopReason: 'final_answer',
    iterations,
    terminatedByLimit: false,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null },
    toolCallHistory: [],
    continuedFrom: null,
    changedFiles: [],
    checkpointWarning: null,
    checkpoints: [],
  };
}
