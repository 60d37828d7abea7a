// The extension host's record of runs: the source of truth the webview is rebuilt from.
//
// Pure (no VS Code API): the controller feeds it what the daemon sends; it keeps one RunState
// per run, knows which run is active and which is on display, and produces the messages for
// the webview. Events of the displayed run are batched (one message per flush) so a burst of
// thousands of notifications costs the webview a handful of messages, not thousands.

import type { ApproveToolCallParams, RunDetail, RunResult, RunSummary } from '../protocol';
import { conversationOf, groupConversations } from '../shared/conversations';
import type { DaemonStatus, HistoryView, HostMessage, RunTab, ThreadTurns, ViewState } from '../shared/messages';
import {
  type ApprovalDecision,
  type RunSnapshot,
  type ApprovalState,
  type RunEvent,
  type RunHeader,
  type RunNotification,
  RunState,
  type UndoInfo,
} from '../shared/runState';

export type Scheduler = (flush: () => void) => void;

export type ApprovalAnswer = ApprovalDecision | 'withdrawn';

interface PendingApproval {
  runId: string;
  protected: boolean;
  resolve: (answer: ApprovalAnswer) => void;
}

export interface RunStoreOptions {
  /** Schedules a flush of batched events; the default waits one 16 ms tick. */
  schedule?: Scheduler;
  /** Stored runs kept in memory besides this session's own. */
  maxCachedHistoryRuns?: number;
}

/** Runs of this session the panel lists at most (active ones always). */
const MAX_TABS = 8;

const defaultScheduler: Scheduler = (flush) => {
  setTimeout(flush, 16);
};

export class RunStore {
  private readonly runs = new Map<string, RunState>();
  private readonly historyRunIds: string[] = [];
  private readonly approvals = new Map<string, PendingApproval>();
  private readonly listeners = new Set<(message: HostMessage) => void>();
  private readonly changeListeners = new Set<() => void>();
  private readonly schedule: Scheduler;
  private readonly maxCachedHistoryRuns: number;
  private pending: RunEvent[] = [];
  private pendingRunId: string | null = null;
  private flushScheduled = false;
  /** Runs this client has going, oldest first. */
  private readonly activeIds = new Set<string>();
  /** This session's runs, in the order they began (the panel's run list). */
  private readonly sessionIds: string[] = [];
  private lastTabs = '[]';
  private tabsPending = false;
  private displayedId: string | null = null;
  private daemonStatus: DaemonStatus = { state: 'stopped', message: 'The daemon is not running.' };
  private historyView: HistoryView = { runs: [], error: null, loading: false };

  constructor(options: RunStoreOptions = {}) {
    this.schedule = options.schedule ?? defaultScheduler;
    this.maxCachedHistoryRuns = options.maxCachedHistoryRuns ?? 40;
  }

  /** Messages for the webview. */
  onMessage(listener: (message: HostMessage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Called after anything that changes the active run (the status bar listens). */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** The newest run this client has going (null: none). */
  get activeRun(): RunState | null {
    const ids = [...this.activeIds];
    const newest = ids[ids.length - 1];
    return newest === undefined ? null : (this.runs.get(newest) ?? null);
  }

  /** Every run this client has going, oldest first. */
  get activeRuns(): RunState[] {
    return [...this.activeIds].map((id) => this.runs.get(id)).filter((run): run is RunState => run !== undefined);
  }

  isActive(runId: string): boolean {
    return this.activeIds.has(runId);
  }

  pendingApprovalsOf(runId: string): number {
    let count = 0;
    for (const approval of this.approvals.values()) {
      if (approval.runId === runId) count += 1;
    }
    return count;
  }

  /** The panel's list: this session's conversations, newest last (at most MAX_TABS, those
   * going kept). A restore opened here joins the conversation of the run it went back on. */
  tabs(): RunTab[] {
    const session = new Set(this.sessionIds);
    const newest = (turns: readonly RunHeader[]): number => Math.max(...turns.map((turn) => this.sessionIds.indexOf(turn.runId)));
    const conversations = groupConversations(this.headers())
      .filter((conversation) => conversation.turns.some((turn) => session.has(turn.runId)))
      .sort((a, b) => newest(a.turns) - newest(b.turns));
    const tabs = conversations.map((conversation) => {
      const turns = conversation.turns;
      const latest = turns[turns.length - 1] ?? turns[0];
      const first = turns.find((turn) => turn.kind === 'run') ?? turns[0];
      return {
        runId: latest?.runId ?? conversation.rootId,
        prompt: first?.prompt || conversation.rootId,
        turns: turns.length,
        active: turns.some((turn) => this.activeIds.has(turn.runId)),
        pendingApprovals: turns.reduce((sum, turn) => sum + this.pendingApprovalsOf(turn.runId), 0),
        stopReason: latest === undefined ? null : (this.runs.get(latest.runId)?.end?.stopReason ?? null),
      };
    });
    const going = tabs.filter((tab) => tab.active).length;
    const finished = tabs.filter((tab) => !tab.active);
    const keep = new Set([...tabs.filter((tab) => tab.active), ...finished.slice(-Math.max(0, MAX_TABS - going))]);
    return tabs.filter((tab) => keep.has(tab));
  }

  /** The other turns of the displayed run's conversation, around it in time. */
  thread(): ThreadTurns {
    const displayed = this.displayedId;
    const conversation = displayed === null ? null : conversationOf(this.headers(), displayed);
    if (conversation === null) return { before: [], after: [] };
    const index = conversation.turns.findIndex((turn) => turn.runId === displayed);
    const snapshot = (runId: string): RunSnapshot[] => {
      const state = this.runs.get(runId);
      return state === undefined ? [] : [state.toSnapshot()];
    };
    return {
      before: conversation.turns.slice(0, index).flatMap((turn) => snapshot(turn.runId)),
      after: conversation.turns.slice(index + 1).flatMap((turn) => snapshot(turn.runId)),
    };
  }

  private headers(): RunHeader[] {
    return [...this.runs.values()].map((state) => state.header);
  }

  get displayedRun(): RunState | null {
    return this.displayedId === null ? null : (this.runs.get(this.displayedId) ?? null);
  }

  get daemon(): DaemonStatus {
    return this.daemonStatus;
  }

  get history(): HistoryView {
    return this.historyView;
  }

  run(runId: string): RunState | undefined {
    return this.runs.get(runId);
  }

  /** Everything the webview needs to draw itself from nothing. */
  viewState(): ViewState {
    this.flush();
    return {
      daemon: this.daemonStatus,
      history: this.historyView,
      run: this.displayedRun?.toSnapshot() ?? null,
      thread: this.thread(),
      activeRunId: this.activeRun?.runId ?? null,
      runs: this.tabs(),
    };
  }

  // -- runs ------------------------------------------------------------------------------------

  /** A run this client is starting: it becomes the active run and goes on display. */
  beginRun(runId: string, header: Partial<Omit<RunHeader, 'runId'>>): RunState {
    // Its place in its conversation's thread, next to restores the daemon dated.
    const state = new RunState(runId, { startedAt: Date.now() / 1000, ...header, phase: 'pending', source: 'live' });
    this.runs.set(runId, state);
    this.activeIds.add(runId);
    this.sessionIds.push(runId);
    state.onHeader(() => this.changed());
    this.post({ type: 'activeRun', runId });
    this.display(runId);
    this.changed();
    return state;
  }

  /** A daemon notification; unknown runs get a state of their own. */
  notify(notification: RunNotification): void {
    const runId = notification.params.runId;
    let state = this.runs.get(runId);
    if (state === undefined) {
      state = new RunState(runId, { source: 'live' });
      this.runs.set(runId, state);
    }
    const outcome = state.apply(notification);
    if (outcome === 'applied' || outcome === 'buffered') {
      this.forward(runId, { type: 'notification', notification });
      if (this.activeIds.has(runId)) {
        this.changed();
      }
    }
  }

  /** The daemon asks to approve a call; resolves with the user's answer or `withdrawn`. */
  requestApproval(requestId: string, params: ApproveToolCallParams): Promise<ApprovalAnswer> {
    let state = this.runs.get(params.runId);
    if (state === undefined) {
      state = new RunState(params.runId, { source: 'live' });
      this.runs.set(params.runId, state);
    }
    const answer = new Promise<ApprovalAnswer>((resolve) => {
      this.approvals.set(requestId, { runId: params.runId, protected: params.protected ?? false, resolve });
    });
    state.requestApproval(requestId, params);
    const displayed = this.displayedId;
    if (params.runId !== displayed && (displayed === null || this.pendingApprovalsOf(displayed) === 0)) {
      // The run waiting for the user goes on display, unless the one shown waits for them too
      // (then the run list shows the waiting one's badge).
      this.display(params.runId);
    } else if (params.runId === displayed) {
      this.forward(params.runId, { type: 'approvalRequested', requestId, params });
    }
    this.changed();
    return answer;
  }

  /** The user answered (webview or elsewhere). False when nothing waits on that id. */
  answerApproval(requestId: string, decision: ApprovalDecision): boolean {
    return this.settleApproval(requestId, decision);
  }

  /** The daemon withdrew its request (timeout, run stopped). */
  withdrawApproval(requestId: string): boolean {
    return this.settleApproval(requestId, 'withdrawn');
  }

  /**
   * The user pressed Stop: the run's open approvals close at once (the panel's card and the
   * diff), answered `cancel`, which the daemon takes as a stop too. How many there were.
   */
  stopApprovals(runId: string): number {
    let closed = 0;
    for (const [requestId, approval] of [...this.approvals.entries()]) {
      if (approval.runId === runId && this.settleApproval(requestId, 'cancel')) closed += 1;
    }
    return closed;
  }

  pendingApprovalCount(): number {
    return this.approvals.size;
  }

  /** The run's request returned. */
  settleRun(runId: string, result: RunResult): void {
    const state = this.runs.get(runId);
    if (state !== undefined) {
      const changed = this.changesDuring(state, () => state.settle(result));
      if (changed && runId === this.displayedId) {
        // The settle filled holes the webview never saw as events: send it the whole run.
        this.sendDisplayed();
      }
    }
    this.endActive(runId);
  }

  /** The daemon's checkpoints of a finished run (what can be undone). */
  setUndoInfo(runId: string, info: UndoInfo): void {
    const state = this.runs.get(runId);
    if (state === undefined) return;
    state.setUndoInfo(info);
    this.forward(runId, { type: 'undoInfo', info });
  }

  /** The run's request failed. */
  failRun(runId: string, message: string): void {
    const state = this.runs.get(runId);
    if (state !== undefined && !state.finished) {
      state.fail(message);
      this.forward(runId, { type: 'failed', message });
    }
    for (const [requestId, approval] of [...this.approvals.entries()]) {
      if (approval.runId === runId) {
        this.withdrawApproval(requestId);
      }
    }
    this.endActive(runId);
  }

  /** Show a run this store has (live, or read back before). */
  display(runId: string | null): boolean {
    if (runId !== null && !this.runs.has(runId)) {
      return false;
    }
    this.flush();
    this.displayedId = runId;
    this.sendDisplayed();
    return true;
  }

  /** Show a run read back from the history (`getRun`), unless this session streams it. */
  showStoredRun(detail: RunDetail): RunState {
    const state = this.keepStoredRun(detail);
    this.display(detail.runId);
    return state;
  }

  /** Keep a run read back from the history (an earlier turn of a conversation), not shown. */
  keepStoredRun(detail: RunDetail): RunState {
    const live = this.runs.get(detail.runId);
    if (live !== undefined && live.header.source === 'live') {
      return live;
    }
    const state = RunState.fromDetail(detail);
    this.runs.set(detail.runId, state);
    const index = this.historyRunIds.indexOf(detail.runId);
    if (index >= 0) {
      this.historyRunIds.splice(index, 1);
    }
    this.historyRunIds.push(detail.runId);
    while (this.historyRunIds.length > this.maxCachedHistoryRuns) {
      const evicted = this.historyRunIds.shift();
      if (evicted !== undefined && evicted !== this.displayedId && evicted !== detail.runId) {
        this.runs.delete(evicted);
      }
    }
    this.changed(); // a restore joins its conversation's entry in the list
    return state;
  }

  // -- daemon and history ------------------------------------------------------------------

  setDaemon(status: DaemonStatus): void {
    this.daemonStatus = status;
    this.post({ type: 'daemon', daemon: status });
    this.changed();
  }

  setHistoryLoading(): void {
    this.historyView = { ...this.historyView, loading: true };
    this.post({ type: 'history', history: this.historyView });
  }

  setHistory(runs: RunSummary[]): void {
    this.historyView = { runs, error: null, loading: false };
    this.post({ type: 'history', history: this.historyView });
  }

  setHistoryError(error: string): void {
    this.historyView = { ...this.historyView, error, loading: false };
    this.post({ type: 'history', history: this.historyView });
  }

  /** Send what is batched now (also done on the scheduler's tick). */
  flush(): void {
    this.flushScheduled = false;
    if (this.pending.length === 0 || this.pendingRunId === null) {
      if (this.tabsPending) this.sendTabs();
      return;
    }
    const events = this.pending;
    const runId = this.pendingRunId;
    this.pending = [];
    this.pendingRunId = null;
    this.emit({ type: 'runEvents', runId, events });
    if (this.tabsPending) this.sendTabs();
  }

  private sendTabs(): void {
    this.tabsPending = false;
    const tabs = this.tabs();
    const key = JSON.stringify(tabs);
    if (key !== this.lastTabs) {
      this.lastTabs = key;
      this.emit({ type: 'runs', runs: tabs });
    }
  }

  // -- internals -----------------------------------------------------------------------------

  private settleApproval(requestId: string, state: ApprovalState): boolean {
    const pending = this.approvals.get(requestId);
    if (pending === undefined || state === 'pending') {
      return false;
    }
    this.approvals.delete(requestId);
    if (pending.protected && state === 'allow_for_run') {
      // A protected write is asked about every time: the daemon takes "for this run" as this
      // once, so the answer (and what the panel says) is the one that holds.
      state = 'allow';
    }
    this.runs.get(pending.runId)?.settleApproval(requestId, state);
    this.forward(pending.runId, { type: 'approvalSettled', requestId, state });
    pending.resolve(state);
    this.changed();
    return true;
  }

  private endActive(runId: string): void {
    if (this.activeIds.delete(runId)) {
      this.flush();
      this.post({ type: 'activeRun', runId: null });
    }
    this.changed();
  }

  private forward(runId: string, event: RunEvent): void {
    if (runId !== this.displayedId) {
      return;
    }
    if (this.pendingRunId !== null && this.pendingRunId !== runId) {
      this.flush();
    }
    this.pendingRunId = runId;
    this.pending.push(event);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      this.schedule(() => this.flush());
    }
  }

  private sendDisplayed(): void {
    this.emit({ type: 'showRun', run: this.displayedRun?.toSnapshot() ?? null, thread: this.thread() });
  }

  private changesDuring(state: RunState, work: () => void): boolean {
    let changed = false;
    const stop = state.onEntry(() => {
      changed = true;
    });
    try {
      work();
    } finally {
      stop();
    }
    return changed;
  }

  /** Post after sending what is batched, so the webview sees things in order. */
  private post(message: HostMessage): void {
    this.flush();
    this.emit(message);
  }

  private emit(message: HostMessage): void {
    for (const listener of this.listeners) {
      listener(message);
    }
  }

  private changed(): void {
    // The run list is small (MAX_TABS): comparing it whole is cheaper than tracking its parts.
    // While a batch of run events waits for its tick, the list goes out with it (after it).
    if (this.flushScheduled) {
      this.tabsPending = true;
    } else {
      this.sendTabs();
    }
    for (const listener of this.changeListeners) {
      listener();
    }
  }
}
