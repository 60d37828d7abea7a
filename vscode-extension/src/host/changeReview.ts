// File changes in VS Code's diff editor: a proposed write_file/edit_file before the user
// approves it (current file vs proposed text, with Allow / Deny in the editor's title bar),
// and after a run, what each changed file looked like before the run vs now.
//
// Proposed and original texts are virtual documents of the `cleveragents-change` scheme,
// served from memory by this provider; the URI's query says which one. The text a file had
// before a run is kept from the first moment this run may change it (its approval request,
// or its toolCallStarted in profiles that do not ask).

import * as fs from 'node:fs';
import * as path from 'node:path';

import * as vscode from 'vscode';

import type { ApproveToolCallParams } from '../protocol';
import { FILE_CHANGE_TOOLS, proposeChange } from './fileChanges';
import { isInside } from './workspacePaths';

export const CHANGE_SCHEME = 'cleveragents-change';
/** True while a proposed change waits for an answer (the title-bar buttons show then). */
const PENDING_CONTEXT = 'cleveragents.changePending';
const MAX_FILE_BYTES = 5 * 1024 * 1024;

interface PendingProposal {
  requestId: string;
  uri: vscode.Uri;
}

export class ChangeReview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly pending = new Map<string, PendingProposal>();
  /** runId -> absolute path -> the text before the run changed it (null: it did not exist). */
  private readonly originals = new Map<string, Map<string, string | null>>();
  /** What the left side of a run's diffs is called, when not "before the run" (restores). */
  private readonly beforeLabels = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private counter = 0;

  constructor(private readonly log: vscode.LogOutputChannel) {}

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query) ?? '';
  }

  /** Notes the file's text before a file-changing call runs (first time per run and path). */
  rememberOriginal(runId: string, sandboxRoot: string | null, toolName: string, inputs: unknown): void {
    if (!FILE_CHANGE_TOOLS.has(toolName) || sandboxRoot === null) return;
    const file = targetPath(sandboxRoot, inputs);
    if (file === null) return;
    let perRun = this.originals.get(runId);
    if (perRun === undefined) {
      perRun = new Map();
      this.originals.set(runId, perRun);
    }
    if (!perRun.has(file)) perRun.set(file, readText(file));
  }

  /**
   * Opens the diff of a proposed change for an approval. Returns false when there is nothing
   * to show as a diff (not a file tool, a path outside the folder, an edit that will fail).
   */
  async showProposal(requestId: string, params: ApproveToolCallParams, sandboxRoot: string | null): Promise<boolean> {
    if (!FILE_CHANGE_TOOLS.has(params.toolName) || sandboxRoot === null) return false;
    this.rememberOriginal(params.runId, sandboxRoot, params.toolName, params.inputs);
    const file = targetPath(sandboxRoot, params.inputs);
    if (file === null) return false;
    const current = readText(file);
    const proposal = proposeChange(params.toolName, params.inputs, current);
    if (!proposal.ok) {
      this.log.info(`no diff for ${params.toolName} (${params.callId}): ${proposal.reason}`);
      return false;
    }
    const relative = path.relative(sandboxRoot, file) || path.basename(file);
    const right = this.virtual(file, proposal.content, 'proposed');
    const left = current === null ? this.virtual(file, '', 'new file') : vscode.Uri.file(file);
    this.pending.set(requestId, { requestId, uri: right });
    await this.updateContext();
    const title = `${relative} (${current === null ? 'new file' : 'proposed change'}) — Allow or Deny`;
    await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: false, preserveFocus: false });
    return true;
  }

  /** The approval a diff editor belongs to: from the URI the title-bar button passes, or the active tab. */
  requestIdFor(uri: unknown): string | null {
    const candidates: vscode.Uri[] = [];
    if (uri instanceof vscode.Uri) candidates.push(uri);
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    if (input instanceof vscode.TabInputTextDiff) candidates.push(input.modified, input.original);
    for (const candidate of candidates) {
      for (const proposal of this.pending.values()) {
        if (proposal.uri.toString() === candidate.toString()) return proposal.requestId;
      }
    }
    return null;
  }

  /** The approval was answered or withdrawn: close its diff. */
  async settle(requestId: string): Promise<void> {
    const proposal = this.pending.get(requestId);
    if (proposal === undefined) return;
    this.pending.delete(requestId);
    await this.updateContext();
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === proposal.uri.toString());
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs, true);
    this.texts.delete(proposal.uri.query);
  }

  /** After a run: the file before the run vs now (or the file itself when its past is unknown). */
  async showRunChange(runId: string, sandboxRoot: string | null, relativePath: string): Promise<void> {
    if (sandboxRoot === null) return;
    const file = path.resolve(sandboxRoot, relativePath);
    if (!isInside(file, sandboxRoot)) {
      void vscode.window.showWarningMessage(`${relativePath} is outside the run's folder.`);
      return;
    }
    const perRun = this.originals.get(runId);
    const exists = fs.existsSync(file);
    if (perRun === undefined || !perRun.has(file)) {
      if (exists) await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
      else void vscode.window.showInformationMessage(`${relativePath} no longer exists.`);
      return;
    }
    const before = perRun.get(file) ?? null;
    const beforeLabel = this.beforeLabels.get(runId) ?? 'before the run';
    const left = this.virtual(file, before ?? '', before === null ? 'did not exist' : beforeLabel);
    const right = exists ? vscode.Uri.file(file) : this.virtual(file, '', 'deleted');
    const label = path.relative(sandboxRoot, file);
    await vscode.commands.executeCommand('vscode.diff', left, right, `${label} (${beforeLabel} ↔ now)`, { preview: true });
  }

  /** The texts of files in a folder now (null: missing or not text), by absolute path. */
  readFiles(sandboxRoot: string, relativePaths: readonly string[]): Map<string, string | null> {
    const texts = new Map<string, string | null>();
    for (const relative of relativePaths) {
      const file = path.resolve(sandboxRoot, relative);
      if (isInside(file, sandboxRoot)) texts.set(file, readText(file));
    }
    return texts;
  }

  /** Texts read before a change that was not a run's tool call (a restore), for its diffs. */
  adoptOriginals(runId: string, texts: Map<string, string | null>, label: string): void {
    this.originals.set(runId, texts);
    this.beforeLabels.set(runId, label);
  }

  forgetRun(runId: string): void {
    this.originals.delete(runId);
    this.beforeLabels.delete(runId);
  }

  dispose(): void {
    this.changed.dispose();
  }

  private virtual(file: string, text: string, label: string): vscode.Uri {
    this.counter += 1;
    const key = `${this.counter}-${label.replace(/\W+/g, '-')}`;
    this.texts.set(key, text);
    return vscode.Uri.from({ scheme: CHANGE_SCHEME, path: file, query: key });
  }

  private async updateContext(): Promise<void> {
    await vscode.commands.executeCommand('setContext', PENDING_CONTEXT, this.pending.size > 0);
  }
}

/** The absolute path a call's `path` input names, when it is inside the run's folder. */
function targetPath(sandboxRoot: string, inputs: unknown): string | null {
  const value = (inputs as Record<string, unknown> | null)?.path;
  if (typeof value !== 'string' || value.trim() === '') return null;
  const file = path.resolve(sandboxRoot, value);
  return isInside(file, sandboxRoot) && file !== path.resolve(sandboxRoot) ? file : null;
}

function readText(file: string): string | null {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile() || stat.size > MAX_FILE_BYTES) return null;
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}
