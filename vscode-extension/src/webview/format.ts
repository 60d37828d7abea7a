// Text the panel shows: durations, times, pretty JSON, one-line summaries. Pure functions.

import type { InstructionFile, PlanStep, SnapshotView, StopReason, UsageView } from '../shared/runState';

/** The checklist marks of a plan's steps. */
export const PLAN_MARKS: Record<PlanStep['status'], string> = { done: '✓', in_progress: '▸', pending: '○' };

/** A step's status for screen readers. */
export const PLAN_STATUS_WORDS: Record<PlanStep['status'], string> = {
  done: 'done',
  in_progress: 'in progress',
  pending: 'to do',
};

/** "Using AGENTS.md, 2 files" and the paths (with what was cut) for its tooltip. */
export function instructionsLine(files: readonly InstructionFile[]): { text: string; title: string } {
  if (files.length === 0) return { text: '', title: '' };
  const names = [...new Set(files.map((file) => file.path.split(/[\\/]/).pop() ?? file.path))].sort();
  const count = `${files.length} file${files.length === 1 ? '' : 's'}`;
  const title = files.map((file) => (file.truncated ? `${file.path} (cut to the size limit)` : file.path)).join('\n');
  return { text: `Using ${names.join(' and ')}, ${count}`, title };
}

/** "Checkpoint before iteration 2: 1,204 files, 85 ms", or what it is still doing, or why it
 * failed: a checkpoint's time is its own, never a tool call's. */
export function snapshotLine(snapshot: SnapshotView | null): string {
  if (snapshot === null) return '';
  const where = `before iteration ${snapshot.iteration}`;
  if (snapshot.saving) return `Saving a checkpoint ${where}… ${formatDuration(snapshot.durationMs)}`;
  if (snapshot.error !== null) return `Checkpoint ${where} failed: ${snapshot.error}`;
  const files = snapshot.files === null ? '' : `${snapshot.files.toLocaleString('en-US')} files, `;
  return `Checkpoint ${where}: ${files}${formatDuration(snapshot.durationMs)}`;
}

export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) {
    return '';
  }
  if (ms < 1) {
    return '<1 ms';
  }
  if (ms < 1000) {
    return `${Math.round(ms)} ms`;
  }
  if (ms < 60_000) {
    const seconds = ms / 1000;
    return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  }
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return seconds > 0 ? `${minutes} min ${seconds} s` : `${minutes} min`;
}

/** JSON with two-space indents, cut at `limit` characters with a note saying how much is left. */
export function prettyJson(value: unknown, limit = 100_000): string {
  let text: string;
  try {
    text = JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    text = String(value);
  }
  if (text.length <= limit) {
    return text;
  }
  const rest = text.length - limit;
  return `${text.slice(0, limit)}\n… ${rest.toLocaleString('en-US')} more characters not shown`;
}

// Inputs that say the most about a call, in the order they are looked for.
const SUMMARY_KEYS = ['path', 'pattern', 'command', 'query', 'file', 'url', 'name'];
// Inputs the runtime adds, which say nothing about this call.
const HIDDEN_KEYS = new Set(['sandbox_root', 'resource_bindings']);

/** A short hint of what a call is about, e.g. its `path` or `command`. */
export function inputSummary(inputs: unknown, maxLength = 80): string {
  if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) {
    return inputs === undefined || inputs === null ? '' : clip(oneLine(JSON.stringify(inputs) ?? ''), maxLength);
  }
  const record = inputs as Record<string, unknown>;
  const keys = Object.keys(record).filter((key) => !HIDDEN_KEYS.has(key));
  const key =
    SUMMARY_KEYS.find((name) => keys.includes(name) && isShown(record[name])) ??
    keys.find((name) => isShown(record[name]));
  if (key === undefined) {
    return '';
  }
  const value = record[key];
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return clip(oneLine(`${key}: ${text}`), maxLength);
}

export function relativeTime(epochSeconds: number, nowMs: number = Date.now()): string {
  const seconds = Math.max(0, Math.round(nowMs / 1000 - epochSeconds));
  if (seconds < 45) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 24) return `${hours} h ago`;
  const days = Math.round(hours / 24);
  if (days === 1) return 'yesterday';
  if (days < 7) return `${days} days ago`;
  return new Date(epochSeconds * 1000).toISOString().slice(0, 10);
}

export function stopReasonTitle(reason: StopReason, maxIterations: number | null): string {
  switch (reason) {
    case 'final_answer':
      return 'Finished';
    case 'cancelled':
      return 'Stopped';
    case 'max_iterations':
      return maxIterations ? `Stopped at the iteration limit (${maxIterations})` : 'Stopped at the iteration limit';
    case 'context_exhausted':
      return "Stopped: the model's context window is full";
    case 'error':
      return 'Failed';
  }
}

export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count.toLocaleString('en-US')} ${count === 1 ? singular : pluralForm}`;
}

export function clip(text: string, maxLength: number): string {
  return text.length > maxLength ? `${text.slice(0, maxLength - 1)}…` : text;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function isShown(value: unknown): boolean {
  return (typeof value === 'string' && value.trim() !== '') || typeof value === 'number' || typeof value === 'boolean';
}

/** The workspace path a call is about (`path` or `file` input), if any. */
export function inputPath(inputs: unknown): string | null {
  if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) return null;
  const record = inputs as Record<string, unknown>;
  for (const key of ['path', 'file']) {
    const value = record[key];
    if (typeof value === 'string' && value.trim() !== '' && value.length < 4096) return value;
  }
  return null;
}

export interface UsageText {
  tokens: string;
  cost: string;
}

/** Tokens and cost for the run header; "—" where the daemon reported nothing (or is older). */
export function formatUsage(usage: UsageView | null): UsageText {
  const known = usage !== null && usage.inputTokens + usage.outputTokens > 0;
  let tokens = '—';
  if (known) {
    tokens = `${usage.inputTokens.toLocaleString('en-US')} in · ${usage.outputTokens.toLocaleString('en-US')} out`;
    const cached = usage.cacheReadTokens ?? 0;
    if (cached > 0) tokens += ` (${cached.toLocaleString('en-US')} cached)`;
  }
  const costUsd = usage?.costUsd;
  let cost = '—';
  if (typeof costUsd === 'number' && Number.isFinite(costUsd) && costUsd >= 0) {
    cost = costUsd === 0 ? '$0.00' : costUsd < 0.01 ? `$${costUsd.toFixed(4)}` : `$${costUsd.toFixed(2)}`;
  }
  return { tokens, cost };
}
