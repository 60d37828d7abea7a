// The `cleveragents.runView` webview view. It keeps no state of its own: when VS Code
// recreates the page (the view was hidden), the page says `ready` and gets the run store's
// whole state again, so `retainContextWhenHidden` is not needed.

import * as vscode from 'vscode';

import type { HostMessage, Notice, WebviewMessage } from '../shared/messages';
import type { RunController } from './runController';
import type { RunStore } from './runStore';
import { createNonce, renderWebviewHtml } from './webviewHtml';

export const RUN_VIEW_ID = 'cleveragents.runView';

export class RunViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | null = null;
  private ready = false;
  private notice: Notice | null = null;
  private focusPromptWhenReady = false;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: RunStore,
    private readonly controller: RunController,
    private readonly log: vscode.LogOutputChannel,
  ) {
    const stop = store.onMessage((message) => this.post(message));
    this.disposables.push({ dispose: stop });
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const webview = view.webview;
    webview.options = {
      enableScripts: true,
      localResourceRoots: [
        vscode.Uri.joinPath(this.extensionUri, 'dist'),
        vscode.Uri.joinPath(this.extensionUri, 'media'),
      ],
    };
    webview.html = renderWebviewHtml({
      cspSource: webview.cspSource,
      nonce: createNonce(),
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'webview.css')).toString(),
    });
    const subscriptions = [
      webview.onDidReceiveMessage((message: WebviewMessage) => this.receive(message)),
      view.onDidChangeVisibility(() => {
        if (!view.visible) {
          this.ready = false;
        }
      }),
    ];
    view.onDidDispose(() => {
      subscriptions.forEach((subscription) => subscription.dispose());
      if (this.view === view) {
        this.view = null;
        this.ready = false;
      }
    });
  }

  /** Shows the panel; `focusPrompt` moves the keyboard focus to the prompt box. */
  async reveal(preserveFocus: boolean, focusPrompt = false): Promise<void> {
    if (this.view !== null) {
      this.view.show(preserveFocus);
    } else {
      await vscode.commands.executeCommand(`${RUN_VIEW_ID}.focus`, { preserveFocus });
    }
    if (focusPrompt) {
      if (this.ready) {
        this.post({ type: 'focusPrompt' });
      } else {
        this.focusPromptWhenReady = true;
      }
    }
  }

  showNotice(notice: Notice | null): void {
    this.notice = notice;
    this.post({ type: 'notice', notice });
  }

  dispose(): void {
    this.disposables.forEach((disposable) => disposable.dispose());
  }

  private post(message: HostMessage): void {
    if (this.view === null || !this.ready) {
      return; // the page rebuilds itself from the store when it says `ready`
    }
    void this.view.webview.postMessage(message);
  }

  private receive(message: WebviewMessage): void {
    switch (message.type) {
      case 'ready':
        this.ready = true;
        this.post({ type: 'state', state: this.store.viewState() });
        this.post({ type: 'notice', notice: this.notice });
        if (this.focusPromptWhenReady) {
          this.focusPromptWhenReady = false;
          this.post({ type: 'focusPrompt' });
        }
        void this.controller.refreshHistory();
        break;
      case 'run':
        void this.controller.startRun(message.prompt);
        break;
      case 'continue':
        void this.controller.startRun(message.prompt, message.runId);
        break;
      case 'stop':
        void this.controller.stop(message.runId);
        break;
      case 'approve':
        this.controller.answerApproval(message.requestId, message.decision);
        break;
      case 'openRun':
        void this.controller.openRun(message.runId);
        break;
      case 'refreshHistory':
        void this.controller.refreshHistory();
        break;
      case 'restartDaemon':
        void vscode.commands.executeCommand('cleveragents.restartDaemon');
        break;
      case 'showOutput':
        this.log.show();
        break;
      case 'openSettings':
        void vscode.commands.executeCommand('workbench.action.openSettings', '@ext:cleveragents.cleveragents');
        break;
      case 'openFile':
        void this.controller.openFile(message.path, message.line, message.runId);
        break;
      case 'openLink':
        if (/^(https?:|mailto:)/i.test(message.href)) {
          void vscode.env.openExternal(vscode.Uri.parse(message.href, true));
        }
        break;
      case 'showProposal':
        void this.controller.showProposal(message.requestId);
        break;
      case 'showChange':
        void this.controller.showChange(message.runId, message.path);
        break;
      case 'copy':
        void vscode.env.clipboard.writeText(message.text).then(() => vscode.window.setStatusBarMessage('Copied', 2000));
        break;
      default:
        this.log.warn(`unknown message from the webview: ${JSON.stringify(message).slice(0, 200)}`);
    }
  }
}
