// What the client tools (clientTools.ts) read from VS Code: a file's problems once its
// language server has looked at it again, every file's problems, and the open editors.

import * as fs from 'node:fs';
import * as path from 'node:path';

import * as vscode from 'vscode';

import { settle, SETTLE, type EditorView, type OpenEditor, type Problem, type Severity, type SettleOptions } from './clientTools';
import { isInside, resolveWorkspacePath } from './workspacePaths';

// A file nobody had open: its language server may still be starting, so its first report
// can take a while (a clean file may send none: then this is what the call waits).
const SETTLE_NEWLY_OPENED: SettleOptions = { firstMs: 8000, quietMs: 600, maxMs: 15_000 };

const SEVERITIES: Record<vscode.DiagnosticSeverity, Severity> = {
  [vscode.DiagnosticSeverity.Error]: 'error',
  [vscode.DiagnosticSeverity.Warning]: 'warning',
  [vscode.DiagnosticSeverity.Information]: 'information',
  [vscode.DiagnosticSeverity.Hint]: 'hint',
};

export class VsCodeEditorView implements EditorView {
  /** `sandboxOf`: the folder a run works in (relative paths are taken from there). */
  constructor(private readonly sandboxOf: (runId: string) => string | null) {}

  resolve(given: string, runId: string): string | null {
    return resolveWorkspacePath(given, this.sandboxOf(runId), folders());
  }

  async problems(file: string | null, cancelled: () => boolean): Promise<Problem[]> {
    if (file === null) {
      await settle((listener) => vscode.languages.onDidChangeDiagnostics(listener), SETTLE, cancelled);
      return vscode.languages
        .getDiagnostics()
        .flatMap(([uri, found]) => (uri.scheme === 'file' ? found.map((d) => problem(uri.fsPath, d)) : []));
    }
    const uri = vscode.Uri.file(file);
    const wasOpen = vscode.workspace.textDocuments.some((document) => document.uri.fsPath === file);
    // Listening before the file opens: its first report may come at once.
    const reacted = settle(
      (listener) =>
        vscode.languages.onDidChangeDiagnostics((event) => {
          if (event.uris.some((changed) => changed.fsPath === file)) listener();
        }),
      wasOpen ? SETTLE : SETTLE_NEWLY_OPENED,
      cancelled,
    );
    // An open document is what language servers check (one open already follows the disk),
    // and servers that pull diagnostics (JSON, CSS, HTML) check only those in a tab: shown
    // as a preview, focus left where it is, as an agent's edit usually is.
    const document = await vscode.workspace.openTextDocument(uri);
    if (!inATab(uri)) {
      await vscode.window.showTextDocument(document, { preview: true, preserveFocus: true });
    }
    await reacted;
    return vscode.languages.getDiagnostics(uri).map((d) => problem(file, d));
  }

  openEditors(): OpenEditor[] {
    const active = vscode.window.activeTextEditor?.document.uri.toString() ?? null;
    const seen = new Map<string, OpenEditor>();
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        if (!(tab.input instanceof vscode.TabInputText) || tab.input.uri.scheme !== 'file') continue;
        const uri = tab.input.uri;
        const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
        const known = seen.get(uri.toString());
        seen.set(uri.toString(), {
          path: uri.fsPath,
          active: uri.toString() === active,
          dirty: (known?.dirty ?? false) || tab.isDirty,
          languageId: document?.languageId ?? null,
        });
      }
    }
    return [...seen.values()];
  }

  display(file: string, runId: string): string {
    const given = this.sandboxOf(runId) ?? folders()[0] ?? null;
    if (given === null) return file;
    const base = realOrSelf(given); // `file` came through resolve: its links are resolved
    return isInside(file, base) ? path.relative(base, file) : file;
  }
}

function inATab(uri: vscode.Uri): boolean {
  return vscode.window.tabGroups.all.some((group) =>
    group.tabs.some((tab) => tab.input instanceof vscode.TabInputText && tab.input.uri.toString() === uri.toString()),
  );
}

function realOrSelf(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return file;
  }
}

function folders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}

function problem(file: string, diagnostic: vscode.Diagnostic): Problem {
  const { start, end } = diagnostic.range;
  const code = diagnostic.code;
  return {
    path: file,
    severity: SEVERITIES[diagnostic.severity],
    line: start.line + 1,
    column: start.character + 1,
    endLine: end.line + 1,
    endColumn: end.character + 1,
    source: diagnostic.source ?? null,
    code: code === undefined ? null : typeof code === 'object' ? String(code.value) : String(code),
    message: diagnostic.message,
  };
}
