// What the user's actions do: start, continue and stop runs, answer approvals, read the
// history. The daemon's messages go into the run store; the store drives the webview.

import * as vscode from 'vscode';

import { ErrorCodes, type PromptCommandInfo, type ApproveToolCallParams, type ApproveToolCallResult, type RestoreResult, type RunParams } from '../protocol';
import { DaemonUnavailableError, errorText, type DaemonClient } from '../daemon/daemonClient';
import { conversationOf } from '../shared/conversations';
import { undoInfoOf, type ApprovalDecision, type RunNotification } from '../shared/runState';
import type { ContextItem, ImageItem, Notice } from '../shared/messages';
import type { RunResource } from '../shared/wireAdditions';
import type { ChangeReview } from './changeReview';
import type { RunStore } from './runStore';
import { confirmation, restoreDone, restoreErrorText, restoreTitle, type RestoreTarget } from './restorePlan';
import { chooseSandbox } from './sandbox';
import { stopRun } from './stopRun';
import { isInside, resolveWorkspacePath } from './workspacePaths';
import { newRunId, runParams, type Settings } from './settings';

const HISTORY_PAGE = 50;
// vscode-jsonrpc's codes for requests cut off by a closed connection.
const CONNECTION_GONE = -32097;
const CONNECTION_INACTIVE = -32096;

export interface ControllerDependencies {
  store: RunStore;
  daemon: DaemonClient;
  log: vscode.LogOutputChannel;
  settings: () => Settings;
  /** Shows the runs panel (without taking focus when `preserveFocus`). */
  revealPanel: (preserveFocus: boolean) => Promise<void>;
  /** Shows a notice in the panel (null clears it). */
  notice: (notice: Notice | null) => void;
  /** Diffs of proposed and made file changes. */
  review: ChangeReview;
}

export class RunController {
  private approvalCounter = 0;
  /** Open approval requests, to show their diff again on demand. */
  private readonly approvalParams = new Map<string, ApproveToolCallParams>();
  /** A start is between its checks and `beginRun` (folder pick, daemon start). */
  private launching = false;

  constructor(private readonly deps: ControllerDependencies) {}

  /** Starts a run (or a follow-up of `continueFrom`). Resolves once it is sent, not when it ends. */
  async startRun(
    prompt: string,
    continueFrom: string | null = null,
    context: readonly ContextItem[] = [],
    images: readonly ImageItem[] = [],
  ): Promise<boolean> {
    if (this.launching) {
      return false; // a double click, or the palette while the panel's run is starting
    }
    this.launching = true;
    try {
      return await this.launch(prompt, continueFrom, context, images);
    } finally {
      this.launching = false;
    }
  }

  private async launch(
    prompt: string,
    continueFrom: string | null,
    context: readonly ContextItem[],
    images: readonly ImageItem[],
  ): Promise<boolean> {
    const { store, daemon, log } = this.deps;
    const text = prompt.trim();
    if (!text && images.length === 0) {
      this.deps.notice({ level: 'error', message: 'Type a prompt or attach an image first.' });
      return false;
    }
    const preferred = continueFrom === null ? null : (store.run(continueFrom)?.header.sandboxRoot ?? null);
    const sandboxRoot = await this.pickSandbox(preferred);
    if (sandboxRoot === null) {
      return false;
    }
    try {
      await daemon.ensureStarted();
    } catch (error) {
      this.reportDaemonProblem(error);
      return false;
    }
    const settings = this.deps.settings();
    const runId = newRunId();
    const params: RunParams = runParams(settings, { prompt: text, sandboxRoot, runId, continueFrom });
    const resources = context.filter((item) => isInside(item.path, sandboxRoot)).map(toResource);
    if (resources.length < context.length) {
      log.warn(`${context.length - resources.length} attached file(s) are outside ${sandboxRoot} and were left out`);
    }
    if (resources.length > 0) params.resources = resources;
    if (images.length > 0) params.images = images.map((image) => ({ data: image.data, mediaType: image.mediaType, name: image.name }));
    this.deps.notice(null);
    store.beginRun(runId, {
      prompt: text,
      sandboxRoot,
      continuedFrom: continueFrom,
      provider: settings.provider,
      model: settings.model || null,
      automationProfile: settings.automationProfile,
      maxIterations: settings.maxIterations,
      images: images.map((image) => ({ name: image.name, mediaType: image.mediaType, data: image.data })),
    });
    void this.deps.revealPanel(true);
    log.info(`run ${runId} started in ${sandboxRoot}${continueFrom ? ` (continues ${continueFrom})` : ''}`);
    daemon
      .request('cleveragents/run', params)
      .then((result) => {
        log.info(`run ${runId} ended: ${result.stopReason}, ${result.toolCallHistory.length} tool calls`);
        store.settleRun(runId, result);
        const undo = undoInfoOf(result);
        // A daemon older than protocol 1.3 sends no checkpoints with the result: read them back.
        if (undo !== null) store.setUndoInfo(runId, undo);
        else void this.loadUndoInfo(runId);
      })
      .catch((error: unknown) => {
        const message = runErrorText(error, settings);
        log.error(`run ${runId} failed: ${message}`);
        store.failRun(runId, message);
        this.offerFix(error, settings);
        void this.loadUndoInfo(runId); // a failed run may have changed files before it failed
      })
      .finally(() => {
        void this.refreshHistory(); // once per run, when its row is final
      });
    return true;
  }

  /** A run ended: ask the daemon which of its steps can be restored (its checkpoints). */
  private async loadUndoInfo(runId: string): Promise<void> {
    try {
      const detail = await this.deps.daemon.request('cleveragents/getRun', { runId });
      const undo = undoInfoOf(detail);
      if (undo !== null) this.deps.store.setUndoInfo(runId, undo);
    } catch (error) {
      this.deps.log.warn(`reading the checkpoints of run ${runId}: ${errorText(error)}`);
    }
  }

  /**
   * Undo a run (iteration null) or restore its folder to before an iteration: a dry run
   * first, whose list of files goes into a modal confirmation, then the restore itself. The
   * restore's own entry goes on display, with its changed files and "Undo this restore".
   */
  async restore(runId: string, iteration: number | null): Promise<void> {
    const { daemon, log, store } = this.deps;
    const header = store.run(runId)?.header;
    const target: RestoreTarget = { runId, iteration, kind: header?.kind ?? 'run', prompt: header?.prompt || runId };
    const title = restoreTitle(target);
    let preview: RestoreResult;
    try {
      preview = await daemon.request('cleveragents/restore', { runId, iteration, dryRun: true });
    } catch (error) {
      this.reportRestoreError(title, error);
      return;
    }
    if (preview.changedFiles.length === 0) {
      const message = `${title}: nothing to restore, the files are already as they were.`;
      this.deps.notice({ level: 'info', message });
      void vscode.window.showInformationMessage(message);
      return;
    }
    const ask = confirmation(target, preview);
    const choice = await vscode.window.showWarningMessage(ask.message, { modal: true, detail: ask.detail }, ask.confirm);
    if (choice !== ask.confirm) return;
    const before = this.deps.review.readFiles(preview.sandboxRoot, preview.changedFiles.map((file) => file.path));
    let result: RestoreResult;
    try {
      result = await daemon.request('cleveragents/restore', { runId, iteration, dryRun: false });
    } catch (error) {
      this.reportRestoreError(title, error);
      return;
    }
    const done = restoreDone(target, result);
    log.info(`${title}: ${done} (restore ${result.restoreId ?? 'none'})`);
    this.deps.notice({ level: 'info', message: done });
    await this.refreshHistory();
    if (result.restoreId !== null) {
      this.deps.review.adoptOriginals(result.restoreId, before, 'before the restore');
      await this.openRun(result.restoreId);
    }
  }

  private reportRestoreError(title: string, error: unknown): void {
    const data = (error as { data?: unknown } | null)?.data;
    const message = `${title}: ${restoreErrorText(errorCode(error), errorText(error), data)}`;
    this.deps.log.error(message);
    this.deps.notice({ level: 'error', message });
    void vscode.window.showErrorMessage(message);
  }

  /**
   * Stops `runId`; without one, the run on display when it is going, else the only run going,
   * else the user picks which.
   */
  async stop(runId: string | null = null): Promise<void> {
    const { store } = this.deps;
    let target = runId;
    if (target === null) {
      const displayed = store.displayedRun;
      const active = store.activeRuns;
      if (displayed !== null && store.isActive(displayed.runId)) target = displayed.runId;
      else if (active.length === 1) target = active[0]?.runId ?? null;
      else if (active.length > 1) {
        const picked = await vscode.window.showQuickPick(
          active.map((run) => ({ label: run.header.prompt || run.runId, description: run.runId, runId: run.runId })),
          { title: 'cleveragents: Stop which run?' },
        );
        target = picked?.runId ?? null;
      }
    }
    if (target === null || !store.isActive(target)) {
      return;
    }
    try {
      const { daemon } = this.deps;
      const running = await stopRun(this.deps.store, target, (runId) => daemon.request('cleveragents/cancel', { runId }));
      if (!running) {
        this.deps.log.info(`run ${target} was not running any more`);
      }
    } catch (error) {
      this.deps.log.error(`stopping run ${target}: ${errorText(error)}`);
      this.deps.notice({ level: 'error', message: `Could not stop the run: ${errorText(error)}` });
    }
  }

  /**
   * The daemon asks for an approval; the panel shows it inline, and a file change also opens
   * as a diff with Allow / Deny in its title bar. The user answers in either place.
   */
  async approve(params: ApproveToolCallParams, token: vscode.CancellationToken): Promise<ApproveToolCallResult> {
    this.approvalCounter += 1;
    const requestId = `approval-${this.approvalCounter}`;
    const answer = this.deps.store.requestApproval(requestId, params);
    this.approvalParams.set(requestId, params);
    const cancellation = token.onCancellationRequested(() => {
      this.deps.store.withdrawApproval(requestId);
    });
    void this.deps.revealPanel(true);
    void this.showProposal(requestId);
    try {
      const decision = await answer;
      this.deps.log.info(`approval of ${params.toolName} (${params.callId}) in run ${params.runId}: ${decision}`);
      // A withdrawn request's answer is never read; deny is the safe thing to send anyway.
      return { decision: decision === 'withdrawn' ? 'deny' : decision };
    } finally {
      cancellation.dispose();
      this.approvalParams.delete(requestId);
      void this.deps.review.settle(requestId);
    }
  }

  /** Opens (again) the diff of a pending file-change approval. */
  async showProposal(requestId: string): Promise<void> {
    const params = this.approvalParams.get(requestId);
    if (params === undefined) return;
    const sandboxRoot = this.deps.store.run(params.runId)?.header.sandboxRoot ?? null;
    try {
      await this.deps.review.showProposal(requestId, params, sandboxRoot);
    } catch (error) {
      this.deps.log.warn(`could not show the proposed change: ${errorText(error)}`);
    }
  }

  /** Allow / Deny from a diff editor's title bar. */
  answerFromEditor(uri: unknown, decision: ApprovalDecision): void {
    const requestId = this.deps.review.requestIdFor(uri);
    if (requestId === null) {
      void vscode.window.showInformationMessage('This change is no longer waiting for an answer.');
      return;
    }
    this.answerApproval(requestId, decision);
  }

  /** After a run: a changed file's diff (before the run vs now). */
  async showChange(runId: string, path: string): Promise<void> {
    const sandboxRoot = this.deps.store.run(runId)?.header.sandboxRoot ?? null;
    await this.deps.review.showRunChange(runId, sandboxRoot, path);
  }

  answerApproval(requestId: string, decision: ApprovalDecision): void {
    if (!this.deps.store.answerApproval(requestId, decision)) {
      this.deps.log.info(`approval ${requestId} was already settled`);
    }
  }

  onNotification(notification: RunNotification): void {
    if (notification.method === 'cleveragents/toolCallStarted') {
      const { runId, toolName, inputs } = notification.params;
      const sandboxRoot = this.deps.store.run(runId)?.header.sandboxRoot ?? null;
      this.deps.review.rememberOriginal(runId, sandboxRoot, toolName, inputs);
    }
    this.deps.store.notify(notification);
  }

  async refreshHistory(): Promise<void> {
    const { store, daemon } = this.deps;
    store.setHistoryLoading();
    try {
      const result = await daemon.request('cleveragents/runs', { limit: HISTORY_PAGE, offset: 0 });
      store.setHistory(result.runs);
    } catch (error) {
      store.setHistoryError(
        error instanceof DaemonUnavailableError
          ? 'The history needs the daemon, which is not running.'
          : `Could not read the history: ${errorText(error)}`,
      );
    }
  }

  /** Shows a run with the other turns of its conversation (read from the history as needed). */
  async openRun(runId: string): Promise<void> {
    const { store, daemon } = this.deps;
    const turns = conversationOf(store.history.runs, runId)?.turns.map((turn) => turn.runId) ?? [runId];
    try {
      for (const turnId of turns) {
        const known = store.run(turnId);
        if (known !== undefined && (known.header.source === 'live' || known.finished)) continue;
        store.keepStoredRun(await daemon.request('cleveragents/getRun', { runId: turnId }));
      }
    } catch (error) {
      this.deps.notice({ level: 'error', message: `Could not open run ${runId}: ${errorText(error)}` });
      return;
    }
    store.display(runId);
  }

  /** "New": nothing on display, so the next prompt starts a conversation of its own. */
  newConversation(): void {
    this.deps.store.display(null);
  }

  /** The custom commands (`/name`) of the workspace folder and the user, for completion. */
  async listCommands(): Promise<PromptCommandInfo[]> {
    const displayedRoot = this.deps.store.displayedRun?.header.sandboxRoot ?? null;
    const choice = chooseSandbox(vscode.workspace.workspaceFolders, displayedRoot);
    const sandboxRoot = choice.kind === 'folder' ? choice.folder.uri.fsPath : displayedRoot;
    if (sandboxRoot === null) return [];
    try {
      await this.deps.daemon.ensureStarted();
      return (await this.deps.daemon.request('cleveragents/listCommands', { sandboxRoot })).commands;
    } catch (error) {
      // An older daemon, or one that cannot start: no completion, the prompt still runs.
      this.deps.log.warn(`listing the custom commands: ${errorText(error)}`);
      return [];
    }
  }

  /** Opens a path from a record or an answer, when it is a file inside the workspace. */
  async openFile(candidate: string, line: number | null, runId: string | null): Promise<void> {
    const folders = (vscode.workspace.workspaceFolders ?? [])
      .filter((folder) => folder.uri.scheme === 'file')
      .map((folder) => folder.uri.fsPath);
    const base = runId === null ? null : (this.deps.store.run(runId)?.header.sandboxRoot ?? null);
    const file = resolveWorkspacePath(candidate, base, folders);
    if (file === null) {
      void vscode.window.showInformationMessage(`${candidate} is not a file in this workspace.`);
      return;
    }
    const options: vscode.TextDocumentShowOptions = { preview: true };
    if (line !== null) {
      const position = new vscode.Position(Math.max(0, line - 1), 0);
      options.selection = new vscode.Range(position, position);
    }
    try {
      await vscode.window.showTextDocument(vscode.Uri.file(file), options);
    } catch {
      // A folder or a binary file: let VS Code decide how to show it.
      await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(file));
    }
  }

  private async pickSandbox(preferred: string | null): Promise<string | null> {
    const choice = chooseSandbox(vscode.workspace.workspaceFolders, preferred);
    if (choice.kind === 'none') {
      this.deps.notice({ level: 'error', message: choice.message });
      void vscode.window.showErrorMessage(choice.message, 'Open Folder').then((action) => {
        if (action === 'Open Folder') void vscode.commands.executeCommand('workbench.action.files.openFolder');
      });
      return null;
    }
    if (choice.kind === 'folder') {
      return choice.folder.uri.fsPath;
    }
    const folder = await vscode.window.showWorkspaceFolderPick({
      placeHolder: 'Which folder may the run work in? Tools reach nothing outside it.',
    });
    return folder?.uri.fsPath ?? null;
  }

  private reportDaemonProblem(error: unknown): void {
    const message = errorText(error);
    this.deps.notice({ level: 'error', message });
    const fixable = error instanceof DaemonUnavailableError && error.kind !== 'start-failed';
    const actions = fixable ? ['Set Python Path', 'Show Output'] : ['Show Output'];
    void vscode.window.showErrorMessage(message, ...actions).then((action) => {
      if (action === 'Set Python Path') {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'cleveragents.pythonPath');
      } else if (action === 'Show Output') {
        this.deps.log.show();
      }
    });
  }

  private offerFix(error: unknown, settings: Settings): void {
    if (errorCode(error) !== ErrorCodes.ProviderUnavailable) {
      return;
    }
    const keyed = settings.provider === 'anthropic' || settings.provider === 'openai';
    const message = runErrorText(error, settings);
    const actions = keyed ? ['Set API Key', 'Open Settings'] : ['Open Settings'];
    void vscode.window.showErrorMessage(message, ...actions).then((action) => {
      if (action === 'Set API Key') void vscode.commands.executeCommand('cleveragents.setApiKey');
      if (action === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', 'cleveragents');
    });
  }
}

function toResource(item: ContextItem): RunResource {
  const resource: RunResource = { path: item.path, text: item.text };
  if (item.startLine !== null) resource.startLine = item.startLine;
  if (item.endLine !== null) resource.endLine = item.endLine;
  return resource;
}

function errorCode(error: unknown): number | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : null;
}

function runErrorText(error: unknown, settings: Settings): string {
  const text = errorText(error);
  if (errorCode(error) === ErrorCodes.ProviderUnavailable && (settings.provider === 'anthropic' || settings.provider === 'openai')) {
    return `${text} Run "cleveragents: Set API Key" to store a key for ${settings.provider}.`;
  }
  const code = errorCode(error);
  if (code === ErrorCodes.InvalidParams && /resources/.test(text)) {
    return `${text}. This daemon cannot take attached context yet: update cleveragents, or run without the attached files.`;
  }
  if (code === CONNECTION_GONE || code === CONNECTION_INACTIVE) {
    return `The daemon stopped during the run; its records up to then are kept (${text}).`;
  }
  return text;
}
