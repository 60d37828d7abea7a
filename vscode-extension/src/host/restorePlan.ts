// Undo in words: what a restore is called, what its dry run says will change (for the
// confirmation), and what the daemon's refusals mean for the user. Pure.

import { ErrorCodes, type ChangedFile, type RestoreResult, type RunKind } from '../protocol';

/** Files listed by name in the confirmation; the rest are counted. */
const MAX_LISTED = 30;

export interface RestoreTarget {
  runId: string;
  /** Restore to before this iteration; null: undo the whole run (or restore). */
  iteration: number | null;
  kind: RunKind;
  prompt: string;
}

export interface RestoreConfirmation {
  /** The modal's question. */
  message: string;
  /** The files that will change, one a line. */
  detail: string;
  /** The button that does it. */
  confirm: string;
}

export function restoreTitle(target: RestoreTarget): string {
  if (target.kind === 'restore') return `Undo "${clip(target.prompt)}"`;
  if (target.iteration === null) return `Undo the run "${clip(target.prompt)}"`;
  return `Restore the folder to before step ${target.iteration} of "${clip(target.prompt)}"`;
}

/** The confirmation for a restore whose dry run answered `preview`. */
export function confirmation(target: RestoreTarget, preview: RestoreResult): RestoreConfirmation {
  const files = preview.changedFiles;
  const lines = files.slice(0, MAX_LISTED).map((file) => `${changeVerb(file.change)}: ${file.path}`);
  if (files.length > MAX_LISTED) lines.push(`… and ${files.length - MAX_LISTED} more`);
  if (preview.kept.length > 0) {
    lines.push('', `Left as they are (an ignored or too-large file is in the way): ${preview.kept.join(', ')}`);
  }
  lines.push('', 'The folder as it is now is saved first, so this can be undone too.');
  const count = files.length === 1 ? '1 file' : `${files.length} files`;
  return {
    message: `${restoreTitle(target)}? ${count} in ${preview.sandboxRoot} will change.`,
    detail: lines.join('\n'),
    confirm: target.iteration !== null ? 'Restore' : target.kind === 'restore' ? 'Undo Restore' : 'Undo Run',
  };
}

/** What the restore does to a file, from the restore's side (`deleted`: it deletes the file). */
export function changeVerb(change: ChangedFile['change']): string {
  switch (change) {
    case 'added':
      return 'Brought back';
    case 'modified':
      return 'Changed back';
    case 'deleted':
      return 'Deleted';
  }
}

/** After the restore: one line for the panel and the notification. */
export function restoreDone(target: RestoreTarget, result: RestoreResult): string {
  const files = result.changedFiles;
  const what = target.iteration === null ? (target.kind === 'restore' ? 'Undid the restore' : 'Undid the run') : `Restored to before step ${target.iteration}`;
  const names = files.slice(0, 5).map((file) => `${file.path} (${changeVerb(file.change).toLowerCase()})`);
  const more = files.length > 5 ? ` and ${files.length - 5} more` : '';
  const kept = result.kept.length > 0 ? ` ${result.kept.length} file(s) were left as they are.` : '';
  const changed = files.length > 0 ? `${names.join(', ')}${more}` : 'no file needed changing';
  return `${what}: ${changed}.${kept}`;
}

/** The daemon refused or failed a restore: what happened and what to do. */
export function restoreErrorText(code: number | null, message: string, data: unknown): string {
  const record = (data !== null && typeof data === 'object' ? data : {}) as Record<string, unknown>;
  if (code === ErrorCodes.RunActive) {
    const folder = typeof record.sandboxRoot === 'string' ? record.sandboxRoot : 'this folder';
    const runs = Array.isArray(record.activeRunIds) ? record.activeRunIds.filter((id) => typeof id === 'string') : [];
    const which = runs.length > 0 ? ` (${runs.join(', ')})` : '';
    return `Cannot restore while a run is going in ${folder}${which}: stop it or let it finish, then try again.`;
  }
  if (code === ErrorCodes.RestoreFailed && typeof record.restoreId === 'string') {
    return `${message} The restore stopped part way: undo it from the history (${record.restoreId}) to put the folder back.`;
  }
  return message;
}

function clip(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}
