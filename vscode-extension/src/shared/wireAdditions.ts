// Wire types this extension reads beyond src/protocol.ts (generated from protocol/schema.json):
// the looser Usage an older daemon sends.

import type { RunResource, ServerNotifications, TrustWorkspaceParams, TrustWorkspaceResult, Usage, UsageParams } from '../protocol';

/** Usage as the panel keeps it: a daemon older than usage reporting sends only the two counts. */
export type UsageView = Pick<Usage, 'inputTokens' | 'outputTokens'> & Partial<Omit<Usage, 'inputTokens' | 'outputTokens'>>;

export type { RunResource, TrustWorkspaceParams, TrustWorkspaceResult, UsageParams };

export type AllServerNotifications = ServerNotifications;
