// The `cleveragents.runView` webview view. It keeps no state of its own: when VS Code
// recreates the page (the view was hidden), the page says `ready` and gets the run store's
// whole state again, so `retainContextWhenHidden` is not needed.

import * as vscode from 'vscode';

import type { HostMessage, Notice, RunOptionsView, WebviewMessage } from '../shared/messages';
import { currentFileContext, findWorkspaceFiles, resolveMention, selectionContext } from './promptContext';
import { applyRunOptions, cleanRunOptions, RUN_OPTIONS_KEY, type RunOptions } from './runOptions';
import { AUTOMATION_PROFILES, PROVIDERS, type Settings } from './settings';
import type { RunController } from './runController';
import type { RunStore } from './runStore';
import { createNonce, renderWebviewHtml } from './webviewHtml';

export const RUN_VIEW_ID = 'cleveragents.runView';

export class RunViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | null = null;
  private ready = false;
  private notice: Notice | null = null;
  private focusPromptWhenReady = false;
  /** The last pick of run options being saved: a run the user starts next waits for it. */
  private optionsSaved: Promise<void> = Promise.resolve();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: RunStore,
    private readonly controller: RunController,
    private readonly log: vscode.LogOutputChannel,
    private readonly workspaceState: vscode.Memento,
    private readonly settings: () => Settings,
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

  /** The settings with the panel's picks laid over them (what the next run uses). */
  runSettings(): Settings {
    return applyRunOptions(this.settings(), cleanRunOptions(this.workspaceState.get(RUN_OPTIONS_KEY)));
  }

  /** Settings changed: the panel shows the new defaults. */
  refreshOptions(): void {
    this.post({ type: 'options', options: this.optionsView() });
  }

  private optionsView(): RunOptionsView {
    const base = this.settings();
    const effective = this.runSettings();
    return {
      provider: effective.provider,
      model: effective.model,
      automationProfile: effective.automationProfile,
      providers: PROVIDERS,
      profiles: AUTOMATION_PROFILES,
      defaults: { provider: base.provider, model: base.model, automationProfile: base.automationProfile },
    };
  }

  private async setOptions(picked: { provider: string; model: string; automationProfile: string }): Promise<void> {
    const base = this.settings();
    const clean = cleanRunOptions(picked);
    // Only what differs from the settings is remembered, so a changed setting still applies.
    const options: RunOptions = {};
    if (clean.provider !== undefined && clean.provider !== base.provider) options.provider = clean.provider;
    if (clean.model !== undefined && clean.model !== (options.provider !== undefined ? '' : base.model)) options.model = clean.model;
    if (clean.automationProfile !== undefined && clean.automationProfile !== base.automationProfile) {
      options.automationProfile = clean.automationProfile;
    }
    await this.workspaceState.update(RUN_OPTIONS_KEY, Object.keys(options).length > 0 ? options : undefined);
    this.refreshOptions();
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
        this.post({ type: 'options', options: this.optionsView() });
        if (this.focusPromptWhenReady) {
          this.focusPromptWhenReady = false;
          this.post({ type: 'focusPrompt' });
        }
        void this.controller.refreshHistory();
        break;
      case 'run':
        void this.optionsSaved.then(() => this.controller.startRun(message.prompt, null, message.context ?? [], message.images ?? []));
        break;
      case 'continue':
        void this.optionsSaved.then(() => this.controller.startRun(message.prompt, message.runId, message.context ?? [], message.images ?? []));
        break;
      case 'setOptions':
        this.optionsSaved = this.optionsSaved.then(() => this.setOptions(message.options)).catch((error: unknown) => {
          this.log.warn(`saving the run options: ${String(error)}`);
        });
        break;
      case 'addContext': {
        const item = message.what === 'selection' ? selectionContext() : currentFileContext();
        if (typeof item === 'string') this.showNotice({ level: 'info', message: item });
        else this.post({ type: 'context', item });
        break;
      }
      case 'findFiles':
        void findWorkspaceFiles(message.query).then(
          (paths) => this.post({ type: 'files', query: message.query, paths }),
          (error: unknown) => this.log.warn(`finding files for @${message.query}: ${String(error)}`),
        );
        break;
      case 'mention': {
        const file = resolveMention(message.path);
        if (file !== null) this.post({ type: 'context', item: { path: file, text: null, startLine: null, endLine: null, label: message.path } });
        break;
      }
      case 'listCommands':
        void this.controller.listCommands().then((commands) => this.post({ type: 'commands', commands }));
        break;
      case 'newConversation':
        this.controller.newConversation();
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
      case 'restore':
        void this.controller.restore(message.runId, message.iteration);
        break;
      case 'copy':
        void vscode.env.clipboard.writeText(message.text).then(() => vscode.window.setStatusBarMessage('Copied', 2000));
        break;
      default:
        this.log.warn(`unknown message from the webview: ${JSON.stringify(message).slice(0, 200)}`);
    }
  }
}
