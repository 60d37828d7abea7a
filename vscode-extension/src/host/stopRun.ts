// Stop, as the user means it: the cancel goes to the daemon first, then the run's open
// approvals close at once (answered `cancel`), so nothing is left showing a question the run
// no longer asks and no answer can reach the daemon ahead of the cancel. The daemon stops the
// run on either message alone (see docs/cancellation.md).

import type { RunStore } from './runStore';

export type SendCancel = (runId: string) => Promise<{ cancelled: boolean }>;

/** Stops `runId`: whether the daemon said it was still running. */
export async function stopRun(store: RunStore, runId: string, sendCancel: SendCancel): Promise<boolean> {
  const sent = sendCancel(runId); // written before the approvals' answers
  store.stopApprovals(runId);
  return (await sent).cancelled;
}
