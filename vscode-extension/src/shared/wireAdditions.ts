// Wire types this extension reads beyond src/protocol.ts (generated from protocol/schema.json):
// the looser Usage an older daemon sends, and the workspace-trust request until its branch's
// schema is merged (then protocol.ts has them and these go).

import type { RunResource, ServerNotifications, Usage, UsageParams } from '../protocol';

/** Usage as the panel keeps it: a daemon older than usage reporting sends only the two counts. */
export type UsageView = Pick<Usage, 'inputTokens' | 'outputTokens'> & Partial<Omit<Usage, 'inputTokens' | 'outputTokens'>>;

export type { RunResource, UsageParams };

export type AllServerNotifications = ServerNotifications;

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
