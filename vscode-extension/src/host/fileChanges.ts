// What a write_file or edit_file call would make of a file, computed the way the daemon's
// tools do it, so the diff the user approves is the change that will happen. Pure.

export const FILE_CHANGE_TOOLS = new Set(['write_file', 'edit_file']);

export type Proposal =
  | { ok: true; path: string; content: string }
  | { ok: false; path: string | null; reason: string };

/**
 * The proposed content for `toolName` with `inputs`, given the file's `current` text (null:
 * no such file). Mirrors workspace/files.py: write_file replaces everything; edit_file
 * replaces `old_text` once (it must occur exactly once) or everywhere with `replace_all`.
 */
export function proposeChange(toolName: string, inputs: unknown, current: string | null): Proposal {
  const record = (inputs !== null && typeof inputs === 'object' ? inputs : {}) as Record<string, unknown>;
  const path = typeof record.path === 'string' && record.path.trim() !== '' ? record.path : null;
  if (path === null) return { ok: false, path: null, reason: 'the call names no path' };
  if (toolName === 'write_file') {
    if (typeof record.content !== 'string') return { ok: false, path, reason: 'the call has no text content' };
    return { ok: true, path, content: record.content };
  }
  if (toolName !== 'edit_file') return { ok: false, path, reason: `${toolName} does not change a file` };
  const oldText = record.old_text;
  const newText = record.new_text;
  if (typeof oldText !== 'string' || oldText === '' || typeof newText !== 'string') {
    return { ok: false, path, reason: 'the call lacks old_text or new_text' };
  }
  if (current === null) return { ok: false, path, reason: `${path} does not exist, so edit_file will fail` };
  const parts = current.split(oldText);
  const count = parts.length - 1;
  if (count === 0) return { ok: false, path, reason: `old_text is not in ${path}, so edit_file will fail` };
  if (count > 1 && record.replace_all !== true) {
    return { ok: false, path, reason: `old_text occurs ${count} times in ${path}, so edit_file will fail` };
  }
  if (record.replace_all === true) return { ok: true, path, content: parts.join(newText) };
  const at = current.indexOf(oldText);
  return { ok: true, path, content: current.slice(0, at) + newText + current.slice(at + oldText.length) };
}
