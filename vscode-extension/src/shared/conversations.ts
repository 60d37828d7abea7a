// Conversations: the runs a user's prompts made, one after another, as one thread.
//
// A run that continues another (`continuedFrom`) is the next turn of that run's conversation;
// a restore (`kind: restore`, an undo or a "restore to before step N") belongs to the
// conversation of the run it went back on (`restoredRunId`; an undo of a restore follows that
// restore). The panel's run list and its History show conversations, not single runs, and
// the thread shows every turn, restores included, in the order they happened.
//
// Pure (no VS Code, no DOM): the host groups its RunStates, the webview the history's
// summaries, with the same function.

import type { RunKind } from '../protocol';

/** What grouping needs of a run (a RunHeader and a RunSummary both have it). */
export interface TurnLink {
  runId: string;
  kind: RunKind;
  continuedFrom: string | null;
  restoredRunId: string | null;
  /** Unix epoch seconds; null: not known yet (a run being started sorts last). */
  startedAt: number | null;
}

export interface Conversation<T extends TurnLink> {
  /** The first turn known: the conversation's name in the lists. */
  rootId: string;
  /** Every turn, oldest first. */
  turns: T[];
}

/** The turn this one follows: the run it continued, or the run a restore went back on. */
export function previousTurnId(turn: TurnLink): string | null {
  return turn.kind === 'restore' ? turn.restoredRunId : turn.continuedFrom;
}

/**
 * Groups `items` into conversations, newest activity first. A turn whose predecessor is not
 * among `items` (older than the page read, or pruned) starts a conversation of its own.
 */
export function groupConversations<T extends TurnLink>(items: readonly T[]): Conversation<T>[] {
  const byId = new Map(items.map((item) => [item.runId, item]));
  const rootOf = new Map<string, string>();
  const findRoot = (item: T): string => {
    const seen = new Set<string>();
    let current = item;
    for (;;) {
      const known = rootOf.get(current.runId);
      if (known !== undefined) return known;
      seen.add(current.runId);
      const previous = previousTurnId(current);
      const next = previous === null ? undefined : byId.get(previous);
      // A cycle cannot come from the daemon, but a stored history is data: stop at one.
      if (next === undefined || seen.has(next.runId)) return current.runId;
      current = next;
    }
  };
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const root = findRoot(item);
    rootOf.set(item.runId, root);
    const turns = groups.get(root);
    if (turns === undefined) groups.set(root, [item]);
    else turns.push(item);
  }
  const conversations = [...groups.entries()].map(([rootId, turns]) => ({ rootId, turns: inTimeOrder(turns) }));
  return conversations.sort((a, b) => lastStart(b) - lastStart(a));
}

/** The conversation holding `runId` among `items`; null when `runId` is not there. */
export function conversationOf<T extends TurnLink>(items: readonly T[], runId: string): Conversation<T> | null {
  return groupConversations(items).find((conversation) => conversation.turns.some((turn) => turn.runId === runId)) ?? null;
}

/** The newest turn of kind `run`: what the next prompt continues. */
export function lastRunTurn<T extends TurnLink>(conversation: Conversation<T>): T | null {
  for (let index = conversation.turns.length - 1; index >= 0; index -= 1) {
    const turn = conversation.turns[index];
    if (turn !== undefined && turn.kind === 'run') return turn;
  }
  return null;
}

function inTimeOrder<T extends TurnLink>(turns: T[]): T[] {
  // Stable: turns started in the same second keep the order they were given in.
  return turns
    .map((turn, index) => ({ turn, index }))
    .sort((a, b) => startOf(a.turn) - startOf(b.turn) || a.index - b.index)
    .map(({ turn }) => turn);
}

function startOf(turn: TurnLink): number {
  return turn.startedAt ?? Number.POSITIVE_INFINITY;
}

function lastStart<T extends TurnLink>(conversation: Conversation<T>): number {
  const last = conversation.turns[conversation.turns.length - 1];
  return last === undefined ? 0 : startOf(last);
}
