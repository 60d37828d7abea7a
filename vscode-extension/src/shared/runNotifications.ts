// The daemon's notifications of a run (each with runId and seq), which the extension host
// subscribes to and feeds to the run's state. test/unit/runState.test.ts checks that the list
// holds every such notification of protocol/schema.json: a notification left out is dropped
// and the panel shows a gap.

import type { AllServerNotifications } from './wireAdditions';

export const RUN_NOTIFICATIONS: (keyof AllServerNotifications)[] = [
  'cleveragents/runStarted',
  'cleveragents/iterationStarted',
  'cleveragents/textDelta',
  'cleveragents/toolCallStarted',
  'cleveragents/toolCall',
  'cleveragents/runFinished',
  // Newer daemons; an older one never sends them.
  'cleveragents/usage',
  'cleveragents/plan',
  'cleveragents/snapshot',
  'cleveragents/snapshotProgress',
];
