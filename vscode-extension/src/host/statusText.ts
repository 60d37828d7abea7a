// What the status-bar item says (pure, so it can be tested without VS Code).

import type { RunStore } from './runStore';

export interface StatusText {
  text: string;
  tooltip: string;
  warning: boolean;
}

export function statusText(store: RunStore): StatusText | null {
  const active = store.activeRuns;
  if (active.length > 1) {
    const waiting = store.pendingApprovalCount();
    return {
      text: waiting > 0
        ? `$(bell-dot) cleveragents: ${active.length} runs, ${waiting} waiting for approval`
        : `$(loading~spin) cleveragents: ${active.length} runs`,
      tooltip: `${active.length} runs going:\n${active.map((run) => `• ${clip(run.header.prompt)}`).join('\n')}\nClick to open the runs panel.`,
      warning: waiting > 0,
    };
  }
  const run = store.activeRun;
  if (run !== null) {
    const counts = run.counts();
    const prompt = clip(run.header.prompt);
    if (store.pendingApprovalCount() > 0) {
      return {
        text: '$(bell-dot) cleveragents: approval needed',
        tooltip: `"${prompt}" waits for your approval. Click to open the runs panel.`,
        warning: true,
      };
    }
    const iteration = counts.iterations > 0 ? `iteration ${counts.iterations}, ` : '';
    const calls = `${counts.toolCalls} tool call${counts.toolCalls === 1 ? '' : 's'}`;
    return {
      text: `$(loading~spin) cleveragents: ${iteration}${calls}`,
      tooltip: `Running "${prompt}". Click to open the runs panel.`,
      warning: false,
    };
  }
  if (store.daemon.state === 'failed') {
    return {
      text: '$(error) cleveragents',
      tooltip: store.daemon.message,
      warning: true,
    };
  }
  return null;
}

function clip(prompt: string): string {
  return prompt.length > 60 ? `${prompt.slice(0, 59)}…` : prompt;
}
