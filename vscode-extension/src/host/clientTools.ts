// The tools this editor serves the daemon's runs (`cleveragents/callClientTool`): the
// editor's problems (`get_diagnostics`) and its open files (`get_open_editors`). Pure: what
// the editor knows comes through `EditorView` (editorView.ts reads VS Code), so the tools'
// arguments, answers and waits are tested without an editor.

import type { CallClientToolParams, CallClientToolResult, ClientToolDeclaration } from '../protocol';

export const GET_DIAGNOSTICS = 'get_diagnostics';
export const GET_OPEN_EDITORS = 'get_open_editors';

/** What `initialize` declares (`capabilities.experimental.cleveragents.tools`). */
export const CLIENT_TOOLS: ClientToolDeclaration[] = [
  {
    name: GET_DIAGNOSTICS,
    description:
      "The editor's problems (type errors, lint, syntax errors) for one file, or for every file " +
      'the editor knows when `path` is left out: severity, 1-based line and column, source, ' +
      'code and message. Call it after changing a file to see what the editor reports about it ' +
      '(it waits for the editor to check the file again).',
    inputSchema: {
      type: 'object',
      properties: {
        path: { type: 'string', description: "A file's path, relative to the run's folder or absolute." },
      },
      additionalProperties: false,
    },
    readOnly: true,
    timeoutSeconds: 30,
  },
  {
    name: GET_OPEN_EDITORS,
    description:
      'The files open in the editor: their paths, which one is active, which have unsaved changes, and their language.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    readOnly: true,
    timeoutSeconds: 10,
  },
];

export type Severity = 'error' | 'warning' | 'information' | 'hint';

/** One problem as the model reads it: lines and columns 1-based, as editors show them. */
export interface Problem {
  path: string;
  severity: Severity;
  line: number;
  column: number;
  endLine: number;
  endColumn: number;
  source: string | null;
  code: string | null;
  message: string;
}

export interface OpenEditor {
  path: string;
  active: boolean;
  dirty: boolean;
  languageId: string | null;
}

/** What the tools read from the editor (editorView.ts over VS Code; a fake in tests). */
export interface EditorView {
  /** The absolute file `path` names inside the workspace (relative to the run's folder), or null. */
  resolve(path: string, runId: string): string | null;
  /**
   * The file's problems once the editor has checked it again (it opens the file, so its
   * language server looks at it); `null` file: every file's, once the problems settle.
   */
  problems(file: string | null, cancelled: () => boolean): Promise<Problem[]>;
  openEditors(): OpenEditor[];
  /** `file` shown relative to the run's folder when inside it. */
  display(file: string, runId: string): string;
}

export interface Cancellation {
  readonly isCancellationRequested: boolean;
}

/** Answer one `cleveragents/callClientTool`; a problem the model can act on is `isError`. */
export async function callClientTool(
  params: CallClientToolParams,
  view: EditorView,
  token: Cancellation,
): Promise<CallClientToolResult> {
  const args = params.arguments;
  switch (params.name) {
    case GET_DIAGNOSTICS: {
      const given = args['path'];
      if (given !== undefined && typeof given !== 'string') {
        return failure('`path` must be a string');
      }
      let file: string | null = null;
      if (given !== undefined) {
        file = view.resolve(given, params.runId);
        if (file === null) {
          return failure(`${given}: no such file in the workspace`);
        }
      }
      const problems = await view.problems(file, () => token.isCancellationRequested);
      const shown = problems.map((problem) => ({ ...problem, path: view.display(problem.path, params.runId) }));
      return success(diagnosticsText(shown, given ?? null));
    }
    case GET_OPEN_EDITORS: {
      const editors = view.openEditors().map((editor) => ({ ...editor, path: view.display(editor.path, params.runId) }));
      return success(JSON.stringify({ editors }, null, 1));
    }
    default:
      return failure(`this editor serves no tool named ${JSON.stringify(params.name)}`);
  }
}

/** The problems as JSON text: counts first, the problems sorted by file, line, column. */
export function diagnosticsText(problems: Problem[], path: string | null): string {
  const sorted = [...problems].sort(
    (a, b) => a.path.localeCompare(b.path) || a.line - b.line || a.column - b.column,
  );
  const count = (severity: Severity): number => sorted.filter((p) => p.severity === severity).length;
  return JSON.stringify(
    {
      scope: path ?? 'workspace',
      errors: count('error'),
      warnings: count('warning'),
      problems: sorted,
    },
    null,
    1,
  );
}

function success(text: string): CallClientToolResult {
  return { content: [{ type: 'text', text }] };
}

function failure(text: string): CallClientToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

// -- waiting for the editor ------------------------------------------------------------------

export interface SettleOptions {
  /** How long to wait for the editor's first report about the file. */
  firstMs: number;
  /** Once reports come, how long without another one means the editor is done. */
  quietMs: number;
  /** Never wait longer than this in all. */
  maxMs: number;
}

export const SETTLE: SettleOptions = { firstMs: 3000, quietMs: 600, maxMs: 10_000 };

/**
 * Resolves once the editor has reacted: a first change (`subscribe` calls its listener for
 * each change that concerns the file) then `quietMs` without another, or `firstMs` without
 * any (nothing changed: what it reports now is current), or `maxMs` in all, or a cancel. A
 * language server reports in steps (syntax first, types later), hence the quiet period.
 */
export function settle(
  subscribe: (listener: () => void) => { dispose(): void },
  options: SettleOptions,
  cancelled: () => boolean,
): Promise<void> {
  return new Promise((resolve) => {
    const timers: ReturnType<typeof setTimeout>[] = [];
    let quiet: ReturnType<typeof setTimeout> | null = null;
    const poll = setInterval(() => {
      if (cancelled()) done();
    }, 100);
    const subscription = subscribe(() => {
      if (quiet !== null) clearTimeout(quiet);
      quiet = setTimeout(done, options.quietMs);
    });
    function done(): void {
      subscription.dispose();
      for (const timer of timers) clearTimeout(timer);
      if (quiet !== null) clearTimeout(quiet);
      clearInterval(poll);
      resolve();
    }
    timers.push(
      setTimeout(() => {
        if (quiet === null) done();
      }, options.firstMs),
      setTimeout(done, options.maxMs),
    );
  });
}
