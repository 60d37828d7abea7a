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

/** The usage fields newer daemons add to `RunResult`. */
export interface RunResultAdditions {
  usage?: UsageView;
}

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
