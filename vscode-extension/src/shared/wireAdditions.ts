// Wire fields of protocol v1 that this extension reads before src/protocol.ts is regenerated
// with them (see protocol/README.md). Every one is optional: an older daemon sends none of
// them and the panel shows "—" or leaves the feature out.

import type { ServerNotifications, Usage } from '../protocol';

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
