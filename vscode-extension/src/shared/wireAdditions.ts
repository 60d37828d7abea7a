// Wire fields of protocol v1 that this extension reads before src/protocol.ts is regenerated
// with them (see protocol/README.md). Every one is optional: an older daemon sends none of
// them and the panel shows "—" or leaves the feature out.

import type { ClientRequests, ServerNotifications, Usage } from '../protocol';

/** Usage with the fields newer daemons add (cache tokens, cost in USD; null = price unknown). */
export type UsageView = Usage & {
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  costUsd?: number | null;
};

/** `cleveragents/usage`: sent after each model call. */
export interface UsageParams {
  runId: string;
  seq: number;
  iteration: number;
  /** This model call's. */
  usage: UsageView;
  /** The run's so far. */
  total: UsageView;
}

export interface ChangedFile {
  path: string;
  change: 'added' | 'modified' | 'deleted';
}

/** `RunParams.resources`: context the user attached to the prompt. */
export interface RunResource {
  /** Inside the sandbox, relative or absolute. */
  path: string;
  /** A selection or an unsaved buffer; null: the daemon reads the file. */
  text?: string | null;
  startLine?: number | null;
  endLine?: number | null;
}

export type AllServerNotifications = ServerNotifications & { 'cleveragents/usage': UsageParams };

/** The result fields newer daemons add to `RunResult`. */
export interface RunResultAdditions {
  usage?: UsageView;
  changedFiles?: ChangedFile[];
}

/** `RunResult.checkpointWarning`: why the run cannot be (wholly) undone. */
export interface UndoResultAdditions {
  checkpointWarning?: string | null;
}

/** A snapshot of a run's folder, taken just before an iteration first changed it. */
export interface Checkpoint {
  /** The iteration it was taken before; null on a restore's own checkpoint. */
  iteration: number | null;
  createdAt: number;
  note: string | null;
}

/** What `getRun` adds for undo: the entry's kind, its checkpoints and what it changed. */
export interface RunDetailAdditions {
  kind?: 'run' | 'restore';
  restoredRunId?: string | null;
  restoredIteration?: number | null;
  checkpoints?: Checkpoint[];
  changedFiles?: ChangedFile[];
  checkpointWarning?: string | null;
}

/** `cleveragents/restore`: the folder back to before an iteration of a run, or before the run. */
export interface RestoreParams {
  runId: string;
  iteration?: number | null;
  dryRun?: boolean;
}

export interface RestoreResult {
  /** The restore's history entry (restore it to undo the restore); null for a dry run or no change. */
  restoreId: string | null;
  sandboxRoot: string;
  changedFiles: ChangedFile[];
  /** Files left as they are (an ignored or too-large file in the way). */
  kept: string[];
  dryRun: boolean;
}

export type AllClientRequests = ClientRequests & {
  'cleveragents/restore': { params: RestoreParams; result: RestoreResult };
};

/** An MCP server a folder's config would start. */
export interface TrustedServer {
  name: string;
  /** As written (`${VAR}` references unexpanded). */
  command: string;
  args: string[];
  /** Names of the variables it sets (never their values). */
  envNames?: string[];
}

/**
 * `cleveragents/trustWorkspace` (server -> client): may the folder's MCP config start these
 * programs? Sent only to clients that declare `experimental.cleveragents.trust: true`.
 */
export interface TrustWorkspaceParams {
  sandboxRoot: string;
  configPath: string;
  configHash: string;
  servers: TrustedServer[];
}

export interface TrustWorkspaceResult {
  trusted: boolean;
}
