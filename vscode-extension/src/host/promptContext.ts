// Context attached to a prompt: the editor's selection, the current file, or a file picked
// with @ in the prompt box. Sent to the daemon as `RunParams.resources`.

import * as path from 'node:path';

import * as vscode from 'vscode';

import type { ContextItem } from '../shared/messages';

const MAX_SELECTION_CHARS = 100_000;
const FILE_RESULTS = 30;
const EXCLUDE = '{**/node_modules/**,**/.git/**,**/.venv/**,**/__pycache__/**,**/dist/**,**/out/**}';

/** The active editor's selection (or null with the reason). */
export function selectionContext(): ContextItem | string {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined) return 'Open a file and select some text first.';
  const selection = editor.selection;
  if (selection.isEmpty) return 'Select some text in the editor first.';
  const file = localPath(editor.document.uri);
  if (file === null) return 'The selection is not in a file of this workspace.';
  let text = editor.document.getText(selection);
  if (text.length > MAX_SELECTION_CHARS) text = text.slice(0, MAX_SELECTION_CHARS);
  const startLine = selection.start.line + 1;
  const endLine = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line : selection.end.line + 1;
  return { path: file, text, startLine, endLine, label: `${label(file)}:${startLine}-${endLine}` };
}

/** The active editor's file; its unsaved text goes along when it is dirty. */
export function currentFileContext(): ContextItem | string {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined) return 'Open a file first.';
  const file = localPath(editor.document.uri);
  if (file === null) return 'The current file is not in this workspace.';
  const text = editor.document.isDirty ? editor.document.getText().slice(0, MAX_SELECTION_CHARS) : null;
  return { path: file, text, startLine: null, endLine: null, label: label(file) };
}

/** Workspace files whose path contains `query` (for @ completion), relative to their folder. */
export async function findWorkspaceFiles(query: string): Promise<string[]> {
  const cleaned = query.replace(/[{}[\]*?!\\]/g, '');
  const uris = await vscode.workspace.findFiles(`**/*${cleaned}*`, EXCLUDE, FILE_RESULTS * 3);
  return uris
    .map((uri) => vscode.workspace.asRelativePath(uri, false))
    .sort((a, b) => score(a, cleaned) - score(b, cleaned) || a.length - b.length || a.localeCompare(b))
    .slice(0, FILE_RESULTS);
}

/** A workspace-relative path from @ completion, as an absolute path (null: not a workspace file). */
export function resolveMention(relative: string): string | null {
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    if (folder.uri.scheme !== 'file') continue;
    const candidate = path.resolve(folder.uri.fsPath, relative);
    const inside = path.relative(folder.uri.fsPath, candidate);
    if (!inside.startsWith('..') && !path.isAbsolute(inside)) return candidate;
  }
  return null;
}

function score(file: string, query: string): number {
  const base = path.basename(file).toLowerCase();
  const q = query.toLowerCase();
  if (base === q) return 0;
  if (base.startsWith(q)) return 1;
  return base.includes(q) ? 2 : 3;
}

function localPath(uri: vscode.Uri): string | null {
  if (uri.scheme !== 'file') return null;
  return vscode.workspace.getWorkspaceFolder(uri) === undefined ? null : uri.fsPath;
}

function label(file: string): string {
  return vscode.workspace.asRelativePath(file, false);
}
