// The state of one run as the user sees it, built from the daemon's notifications.
//
// Pure (no VS Code, no DOM): the extension host keeps one per run (its run store) and the
// webview keeps one for the run it shows; both feed it the same events. Notifications are
// applied in `seq` order: a duplicate (seq already applied or buffered) is ignored, one that
// arrives early waits in a buffer until the missing ones come, and `settle` (the run's
// request has returned) applies whatever is still buffered, marking the holes as gaps.

import type {
  ApprovalDecision,
  ApproveToolCallParams,
  ChangedFile,
  FinishReason,
  InstructionFile,
  PlanStep,
  RunDetail,
  RunKind,
  RunResult,
  ToolCallRecord,
} from '../protocol';
import type { AllServerNotifications, UsageView } from './wireAdditions';

export type NotificationMethod = keyof AllServerNotifications;

/** One daemon notification, as the extension host received it. */
export type RunNotification = {
  [M in NotificationMethod]: { method: M; params: AllServerNotifications[M] };
}[NotificationMethod];

export type { ChangedFile, InstructionFile, PlanStep, UsageView };

/** `cancel`: the user pressed Stop while asked; the daemon stops the whole run. */
export type { ApprovalDecision };

/** Where an approval stands: waiting, answered (`cancel`: closed by Stop), or withdrawn by the
 * daemon (timeout, run stopped). */
export type ApprovalState = 'pending' | ApprovalDecision | 'withdrawn';

export interface ApprovalView {
  /** Our id for the daemon's `approveToolCall` request (unique per extension host). */
  requestId: string;
  mutating: boolean;
  executesCode: boolean;
  automationProfile: string;
  /** A protected write (a git hook, `core.fsmonitor`, editor tasks): asked every time, so only
   * allow (this once) and deny are offered. */
  protected: boolean;
  /** Why it is asked beyond the profile's rule (the daemon's words), or null. */
  note: string | null;
  state: ApprovalState;
}

/** Why a run ended, as `cleveragents/runFinished` says (the schema's `FinishReason`). */
export type StopReason = FinishReason;

export type ToolCallStatus = 'running' | 'success' | 'failure';

export interface IterationEntry {
  kind: 'iteration';
  id: string;
  iteration: number;
  /** A checkpoint was taken before this iteration changed the folder: it can be restored to. */
  restorable: boolean;
}

export interface TextEntry {
  kind: 'text';
  id: string;
  iteration: number;
  text: string;
}

export interface ToolCallEntry {
  kind: 'toolCall';
  id: string;
  callId: string;
  toolName: string;
  iteration: number;
  /** The model's arguments until the record arrives, then the record's inputs. */
  inputs: unknown;
  status: ToolCallStatus;
  record: ToolCallRecord | null;
  approval: ApprovalView | null;
}

export interface GapEntry {
  kind: 'gap';
  id: string;
  /** The seq numbers that never arrived. */
  missing: number[];
}

export interface EndEntry {
  kind: 'end';
  id: string;
  stopReason: StopReason;
  content: string;
  iterations: number;
  toolCalls: number;
  usage: UsageView | null;
  error: string | null;
  errorType: string | null;
  /** Files the run changed: its write/edit records, and the daemon's list when it sends one. */
  changedFiles: ChangedFile[];
  /** The daemon holds a checkpoint of the folder from before the run: it can be undone. */
  undoable: boolean;
  /** Why the run cannot be (wholly) undone, when the daemon says so. */
  checkpointWarning: string | null;
}

/** What the daemon knows about undoing a finished run (from its result, or `getRun`). */
export interface UndoInfo {
  /** Iterations a checkpoint was taken before (a restore's own checkpoint: null). */
  checkpoints: (number | null)[];
  changedFiles: ChangedFile[];
  checkpointWarning: string | null;
}

/** The undo facts a run's result (protocol 1.3) or its `getRun` detail carries; null from a
 * daemon too old to send its checkpoints there. */
export function undoInfoOf(answer: Pick<RunResult, 'changedFiles' | 'checkpointWarning'> & { checkpoints?: RunResult['checkpoints'] }): UndoInfo | null {
  if (!Array.isArray(answer.checkpoints)) return null;
  return {
    checkpoints: answer.checkpoints.map((checkpoint) => checkpoint.iteration),
    changedFiles: answer.changedFiles ?? [],
    checkpointWarning: answer.checkpointWarning ?? null,
  };
}

export type Entry = IterationEntry | TextEntry | ToolCallEntry | GapEntry | EndEntry;

export type RunPhase = 'pending' | 'running' | 'finished';

export interface RunHeader {
  runId: string;
  prompt: string;
  sandboxRoot: string | null;
  automationProfile: string | null;
  maxIterations: number | null;
  provider: string | null;
  model: string | null;
  continuedFrom: string | null;
  /** pending: sent, not started yet; running; finished (an end entry exists). */
  phase: RunPhase;
  /** live: streamed to this client; history: read back with `getRun`. */
  source: 'live' | 'history';
  /** For history runs: the stored status (finished, cancelled, limit, failed, interrupted). */
  storedStatus: string | null;
  startedAt: number | null;
  /** Tokens and cost so far (`cleveragents/usage`, then the result); null: none reported. */
  usage: UsageView | null;
  /** A run, or a restore of a folder (a history entry; restoring it undoes it). */
  kind: RunKind;
  /** For a restore: the run (or restore) it went back on. */
  restoredRunId: string | null;
  /** The project instructions files (AGENTS.md) in the run's system prompt. */
  instructions: InstructionFile[];
  /** The model's plan as its latest `update_plan` call left it; null: it set none. */
  plan: PlanStep[] | null;
  /** The latest workspace checkpoint (a step of its own, timed apart from the tools); null:
   * none taken yet. `saving` while a slow one is still being written. */
  snapshot: SnapshotView | null;
  /** The images attached to the prompt, shown as thumbnails. */
  images: PromptImage[];
}

/** An image of a run's prompt; `data` (base64) null once the history's store evicted it. */
export interface PromptImage {
  name: string;
  mediaType: string;
  data: string | null;
}

/** The images of a prompt as the daemon sends them (`runStarted`, `getRun`), for the panel. */
export function promptImages(images: readonly PromptImage[]): PromptImage[] {
  return images.map((image) => ({ name: image.name, mediaType: image.mediaType, data: image.data }));
}

/** A workspace checkpoint as the panel shows it (`cleveragents/snapshot` and its progress). */
export interface SnapshotView {
  iteration: number;
  /** Its duration once saved, else the time it has taken so far. */
  durationMs: number;
  files: number | null;
  error: string | null;
  saving: boolean;
}

/** Everything needed to rebuild a RunState elsewhere (plain JSON). */
export interface RunSnapshot {
  header: RunHeader;
  entries: Entry[];
  nextSeq: number;
  buffered: RunNotification[];
  textCounter: number;
}

/** What the extension host forwards to the webview, in the order it happened. */
export type RunEvent =
  | { type: 'notification'; notification: RunNotification }
  | { type: 'approvalRequested'; requestId: string; params: ApproveToolCallParams }
  | { type: 'approvalSettled'; requestId: string; state: ApprovalState }
  | { type: 'failed'; message: string }
  | { type: 'undoInfo'; info: UndoInfo };

export type ApplyOutcome = 'applied' | 'buffered' | 'duplicate' | 'ignored';

/** How a transcript entry changed: new, or an existing one updated (not a file's ChangeKind). */
export type EntryChange = 'added' | 'updated';
export type EntryListener = (entry: Entry, change: EntryChange) => void;
export type HeaderListener = (header: RunHeader) => void;

export interface RunCounts {
  toolCalls: number;
  running: number;
  failed: number;
  iterations: number;
  pendingApprovals: number;
}

export class RunState {
  readonly header: RunHeader;
  private readonly entryList: Entry[] = [];
  private readonly entriesById = new Map<string, Entry>();
  /** The open (or latest) row of each call id; ids can repeat across iterations. */
  private readonly callsById = new Map<string, ToolCallEntry>();
  private readonly approvals = new Map<string, ToolCallEntry>();
  private readonly buffer = new Map<number, RunNotification>();
  private expectedSeq = 1;
  private textCounter = 0;
  private readonly entryListeners = new Set<EntryListener>();
  private readonly headerListeners = new Set<HeaderListener>();

  constructor(runId: string, init: Partial<Omit<RunHeader, 'runId'>> = {}) {
    this.header = {
      runId,
      prompt: init.prompt ?? '',
      sandboxRoot: init.sandboxRoot ?? null,
      automationProfile: init.automationProfile ?? null,
      maxIterations: init.maxIterations ?? null,
      provider: init.provider ?? null,
      model: init.model ?? null,
      continuedFrom: init.continuedFrom ?? null,
      phase: init.phase ?? 'pending',
      source: init.source ?? 'live',
      storedStatus: init.storedStatus ?? null,
      startedAt: init.startedAt ?? null,
      usage: init.usage ?? null,
      kind: init.kind ?? 'run',
      restoredRunId: init.restoredRunId ?? null,
      instructions: init.instructions ?? [],
      plan: init.plan ?? null,
      snapshot: init.snapshot ?? null,
      images: init.images ?? [],
    };
  }

  get runId(): string {
    return this.header.runId;
  }

  get entries(): readonly Entry[] {
    return this.entryList;
  }

  get end(): EndEntry | null {
    const last = this.entryList[this.entryList.length - 1];
    return last?.kind === 'end' ? last : null;
  }

  get finished(): boolean {
    return this.header.phase === 'finished';
  }

  /** The next seq this state waits for. */
  get nextSeq(): number {
    return this.expectedSeq;
  }

  /** Seq numbers known to be missing: between the next expected one and the last buffered. */
  gaps(): number[] {
    if (this.buffer.size === 0) {
      return [];
    }
    const highest = Math.max(...this.buffer.keys());
    const missing: number[] = [];
    for (let seq = this.expectedSeq; seq < highest; seq += 1) {
      if (!this.buffer.has(seq)) {
        missing.push(seq);
      }
    }
    return missing;
  }

  get bufferedCount(): number {
    return this.buffer.size;
  }

  counts(): RunCounts {
    const counts: RunCounts = { toolCalls: 0, running: 0, failed: 0, iterations: 0, pendingApprovals: 0 };
    for (const entry of this.entryList) {
      if (entry.kind === 'toolCall') {
        counts.toolCalls += 1;
        if (entry.status === 'running') counts.running += 1;
        if (entry.status === 'failure') counts.failed += 1;
        if (entry.approval?.state === 'pending') counts.pendingApprovals += 1;
      } else if (entry.kind === 'iteration') {
        counts.iterations = Math.max(counts.iterations, entry.iteration);
      }
    }
    return counts;
  }

  pendingApprovalIds(): string[] {
    return [...this.approvals.entries()]
      .filter(([, entry]) => entry.approval?.state === 'pending')
      .map(([requestId]) => requestId);
  }

  onEntry(listener: EntryListener): () => void {
    this.entryListeners.add(listener);
    return () => this.entryListeners.delete(listener);
  }

  onHeader(listener: HeaderListener): () => void {
    this.headerListeners.add(listener);
    return () => this.headerListeners.delete(listener);
  }

  /** Apply any run event (what the host forwards to the webview). */
  handle(event: RunEvent): void {
    switch (event.type) {
      case 'notification':
        this.apply(event.notification);
        break;
      case 'approvalRequested':
        this.requestApproval(event.requestId, event.params);
        break;
      case 'approvalSettled':
        this.settleApproval(event.requestId, event.state);
        break;
      case 'failed':
        this.fail(event.message);
        break;
      case 'undoInfo':
        this.setUndoInfo(event.info);
        break;
    }
  }

  /** Apply one notification in seq order; see the module comment. */
  apply(notification: RunNotification): ApplyOutcome {
    const { seq, runId } = notification.params;
    if (runId !== this.header.runId || !Number.isInteger(seq) || seq < 1) {
      return 'ignored';
    }
    if (seq < this.expectedSeq || this.buffer.has(seq)) {
      return 'duplicate';
    }
    if (seq > this.expectedSeq) {
      this.buffer.set(seq, notification);
      return 'buffered';
    }
    this.applyInOrder(notification);
    this.drainBuffer();
    return 'applied';
  }

  /**
   * The run's request returned: apply what is still buffered (holes become gap entries), add
   * records the stream never delivered, and end the run if `runFinished` never came.
   */
  settle(result: RunResult): void {
    this.flushBuffer();
    for (const record of result.toolCallHistory) {
      const entry = this.callsById.get(record.callId);
      if (entry === undefined || entry.record === null) {
        this.applyRecord(record);
      }
    }
    if (this.end === null) {
      this.finish({
        stopReason: result.stopReason,
        content: result.content,
        iterations: result.iterations,
        toolCalls: result.toolCallHistory.length,
        usage: result.usage,
        error: null,
        errorType: null,
        changedFiles: [],
        undoable: false,
        checkpointWarning: null,
      });
    }
    this.setUsage(result.usage);
    const end = this.end;
    // `?? []`: a daemon older than undo sends no list.
    const changedFiles = result.changedFiles ?? [];
    if (end !== null && changedFiles.length > 0) {
      const merged = mergeChangedFiles(end.changedFiles, changedFiles);
      if (merged.length !== end.changedFiles.length) {
        end.changedFiles = merged;
        this.emit(end, 'updated');
      }
    }
    if (end !== null && typeof result.checkpointWarning === 'string' && end.checkpointWarning !== result.checkpointWarning) {
      end.checkpointWarning = result.checkpointWarning;
      this.emit(end, 'updated');
    }
  }

  /**
   * The daemon's checkpoints of a finished run: its iterations that can be restored to, and
   * whether the run can be undone. The daemon's list of changed files replaces the one made
   * from the records (it covers commands too).
   */
  setUndoInfo(info: UndoInfo): void {
    const restorable = new Set(info.checkpoints.filter((iteration): iteration is number => iteration !== null));
    const undoable = info.checkpoints.length > 0;
    for (const entry of this.entryList) {
      if (entry.kind !== 'iteration') continue;
      const can = restorable.has(entry.iteration) && this.header.kind === 'run';
      if (entry.restorable !== can) {
        entry.restorable = can;
        this.emit(entry, 'updated');
      }
    }
    const end = this.end;
    if (end === null) return;
    const changedFiles = info.changedFiles.length > 0 ? mergeChangedFiles(info.changedFiles, []) : end.changedFiles;
    if (
      end.undoable !== undoable ||
      end.checkpointWarning !== info.checkpointWarning ||
      JSON.stringify(end.changedFiles) !== JSON.stringify(changedFiles)
    ) {
      end.undoable = undoable;
      end.checkpointWarning = info.checkpointWarning;
      end.changedFiles = changedFiles;
      this.emit(end, 'updated');
    }
  }

  /** The run's request failed (daemon error, daemon gone): end it with the reason. */
  fail(message: string): void {
    this.flushBuffer();
    this.withdrawPendingApprovals();
    if (this.end !== null) {
      return;
    }
    const counts = this.counts();
    this.finish({
      stopReason: 'error',
      content: '',
      iterations: counts.iterations,
      toolCalls: counts.toolCalls,
      usage: null,
      error: message,
      errorType: null,
      changedFiles: [],
      undoable: false,
      checkpointWarning: null,
    });
  }

  requestApproval(requestId: string, params: ApproveToolCallParams): void {
    if (this.approvals.has(requestId)) {
      return;
    }
    let entry = this.callsById.get(params.callId);
    if (entry === undefined || entry.record !== null) {
      // The approval came before (or without) its toolCallStarted: show the call anyway.
      entry = this.addToolCall(params.callId, params.toolName, params.iteration, params.inputs);
    }
    entry.approval = {
      requestId,
      mutating: params.mutating,
      executesCode: params.executesCode,
      automationProfile: params.automationProfile,
      protected: params.protected ?? false,
      note: params.note ?? null,
      state: 'pending',
    };
    this.approvals.set(requestId, entry);
    this.emit(entry, 'updated');
  }

  settleApproval(requestId: string, state: ApprovalState): void {
    const entry = this.approvals.get(requestId);
    if (entry?.approval === null || entry?.approval === undefined) {
      return;
    }
    if (entry.approval.state !== 'pending' || state === 'pending') {
      return;
    }
    entry.approval = { ...entry.approval, state };
    this.emit(entry, 'updated');
  }

  toSnapshot(): RunSnapshot {
    return {
      header: { ...this.header },
      entries: this.entryList.map((entry) => structuredCopy(entry)),
      nextSeq: this.expectedSeq,
      buffered: [...this.buffer.values()],
      textCounter: this.textCounter,
    };
  }

  static fromSnapshot(snapshot: RunSnapshot): RunState {
    const state = new RunState(snapshot.header.runId, snapshot.header);
    for (const entry of snapshot.entries) {
      const copy = structuredCopy(entry);
      state.entryList.push(copy);
      state.entriesById.set(copy.id, copy);
      if (copy.kind === 'toolCall') {
        state.callsById.set(copy.callId, copy);
        if (copy.approval !== null) {
          state.approvals.set(copy.approval.requestId, copy);
        }
      }
    }
    state.expectedSeq = snapshot.nextSeq;
    state.textCounter = snapshot.textCounter;
    for (const notification of snapshot.buffered) {
      state.buffer.set(notification.params.seq, notification);
    }
    return state;
  }

  /** A run read back from the history: iterations, texts and records rebuilt from it. */
  static fromDetail(detail: RunDetail): RunState {
    const state = new RunState(detail.runId, {
      kind: detail.kind ?? 'run',
      restoredRunId: detail.restoredRunId ?? null,
      prompt: detail.prompt,
      sandboxRoot: detail.sandboxRoot,
      automationProfile: detail.automationProfile,
      maxIterations: detail.maxIterations,
      continuedFrom: detail.continuedFrom,
      phase: detail.status === 'running' ? 'running' : 'finished',
      source: 'history',
      storedStatus: detail.status,
      startedAt: detail.startedAt,
      // A daemon older than plans sends none.
      plan: detail.plan ?? null,
      // A daemon older than 1.3 sends no images.
      images: promptImages(detail.images ?? []),
    });
    const recordsByIteration = new Map<number, ToolCallRecord[]>();
    for (const record of detail.toolCallHistory) {
      const list = recordsByIteration.get(record.iteration) ?? [];
      list.push(record);
      recordsByIteration.set(record.iteration, list);
    }
    // Each assistant message is one LLM call (one iteration), in order.
    let iteration = 0;
    for (const message of detail.messages) {
      if (message.role !== 'assistant') {
        continue;
      }
      iteration += 1;
      state.addIteration(iteration);
      if (message.text) {
        state.appendText(iteration, message.text);
      }
      for (const record of recordsByIteration.get(iteration) ?? []) {
        state.applyRecord(record);
      }
      recordsByIteration.delete(iteration);
    }
    // Records whose assistant message was not stored (a crash mid-iteration).
    for (const [number, records] of [...recordsByIteration.entries()].sort((a, b) => a[0] - b[0])) {
      state.addIteration(number);
      for (const record of records) {
        state.applyRecord(record);
      }
    }
    if (detail.status !== 'running') {
      state.finish({
        stopReason: storedStopReason(detail),
        content: detail.content ?? '',
        iterations: detail.iterations,
        toolCalls: detail.toolCallHistory.length,
        usage: detail.usage,
        error: detail.error,
        errorType: detail.errorType,
        changedFiles: [],
        undoable: false,
        checkpointWarning: null,
      });
      state.setUsage(detail.usage);
      // A daemon older than undo sends no checkpoints: nothing to offer.
      state.setUndoInfo({
        checkpoints: (detail.checkpoints ?? []).map((checkpoint) => checkpoint.iteration),
        changedFiles: detail.changedFiles ?? [],
        checkpointWarning: detail.checkpointWarning ?? null,
      });
    }
    // Nothing will stream for a stored run; a late notification counts as a duplicate.
    state.expectedSeq = Number.MAX_SAFE_INTEGER;
    return state;
  }

  // -- applying, in order ---------------------------------------------------------------------

  private drainBuffer(): void {
    let next = this.buffer.get(this.expectedSeq);
    while (next !== undefined) {
      this.buffer.delete(this.expectedSeq);
      this.applyInOrder(next);
      next = this.buffer.get(this.expectedSeq);
    }
  }

  private flushBuffer(): void {
    if (this.buffer.size === 0) {
      return;
    }
    const missing = this.gaps();
    if (missing.length > 0) {
      this.add({ kind: 'gap', id: `gap-${missing[0]}`, missing });
    }
    for (const seq of [...this.buffer.keys()].sort((a, b) => a - b)) {
      const notification = this.buffer.get(seq);
      this.buffer.delete(seq);
      if (notification !== undefined) {
        this.expectedSeq = seq;
        this.applyInOrder(notification);
      }
    }
  }

  private applyInOrder(notification: RunNotification): void {
    this.expectedSeq = notification.params.seq + 1;
    switch (notification.method) {
      case 'cleveragents/runStarted': {
        const p = notification.params;
        Object.assign(this.header, {
          prompt: p.prompt,
          sandboxRoot: p.sandboxRoot,
          automationProfile: p.automationProfile,
          maxIterations: p.maxIterations,
          provider: p.provider,
          model: p.model,
          continuedFrom: p.continuedFrom,
          // A daemon older than project instructions sends none.
          instructions: p.instructions ?? [],
        });
        // Another window's run shows its images too (1.3; an older daemon sends none).
        const images = p.images ?? [];
        if (images.length > 0) {
          this.header.images = promptImages(images);
        }
        if (this.header.phase === 'pending') {
          this.header.phase = 'running';
        }
        this.emitHeader();
        break;
      }
      case 'cleveragents/iterationStarted':
        this.addIteration(notification.params.iteration);
        break;
      case 'cleveragents/textDelta':
        this.appendText(notification.params.iteration, notification.params.text);
        break;
      case 'cleveragents/toolCallStarted': {
        const p = notification.params;
        this.addToolCall(p.callId, p.toolName, p.iteration, p.inputs);
        break;
      }
      case 'cleveragents/toolCall':
        this.applyRecord(notification.params.record);
        break;
      case 'cleveragents/runFinished': {
        const p = notification.params;
        this.withdrawPendingApprovals();
        this.finish({
          stopReason: p.stopReason,
          content: p.content,
          iterations: p.iterations,
          toolCalls: p.toolCalls,
          usage: p.usage,
          error: p.error,
          errorType: p.errorType,
          changedFiles: [],
          undoable: false,
          checkpointWarning: null,
        });
        this.setUsage(p.usage);
        break;
      }
      case 'cleveragents/usage':
        this.setUsage(notification.params.total);
        break;
      case 'cleveragents/plan':
        this.header.plan = notification.params.steps;
        this.emitHeader();
        break;
      case 'cleveragents/snapshotProgress': {
        const p = notification.params;
        this.header.snapshot = { iteration: p.iteration, durationMs: p.elapsedMs, files: null, error: null, saving: true };
        this.emitHeader();
        break;
      }
      case 'cleveragents/snapshot': {
        const p = notification.params;
        this.header.snapshot = { iteration: p.iteration, durationMs: p.durationMs, files: p.files, error: p.error, saving: false };
        this.emitHeader();
        break;
      }
    }
  }

  private addIteration(iteration: number): void {
    const id = `iteration-${iteration}`;
    if (this.entriesById.has(id)) {
      return;
    }
    this.add({ kind: 'iteration', id, iteration, restorable: false });
  }

  private appendText(iteration: number, text: string): void {
    if (text === '') {
      return;
    }
    const last = this.entryList[this.entryList.length - 1];
    if (last?.kind === 'text' && last.iteration === iteration) {
      last.text += text;
      this.emit(last, 'updated');
      return;
    }
    this.textCounter += 1;
    this.add({ kind: 'text', id: `text-${this.textCounter}`, iteration, text });
  }

  private addToolCall(callId: string, toolName: string, iteration: number, inputs: unknown): ToolCallEntry {
    let id = `call-${callId}`;
    for (let n = 2; this.entriesById.has(id); n += 1) {
      id = `call-${callId}#${n}`;
    }
    const entry: ToolCallEntry = {
      kind: 'toolCall',
      id,
      callId,
      toolName,
      iteration,
      inputs,
      status: 'running',
      record: null,
      approval: null,
    };
    this.callsById.set(callId, entry);
    this.add(entry);
    return entry;
  }

  private applyRecord(record: ToolCallRecord): void {
    let entry = this.callsById.get(record.callId);
    if (entry === undefined || entry.record !== null) {
      entry = this.addToolCall(record.callId, record.toolName, record.iteration, record.inputs);
    }
    entry.record = record;
    entry.inputs = record.inputs;
    entry.toolName = record.toolName;
    entry.status = record.success ? 'success' : 'failure';
    if (entry.approval?.state === 'pending') {
      entry.approval = { ...entry.approval, state: 'withdrawn' };
    }
    this.emit(entry, 'updated');
  }

  private withdrawPendingApprovals(): void {
    for (const requestId of this.pendingApprovalIds()) {
      this.settleApproval(requestId, 'withdrawn');
    }
  }

  /** Keeps the richer of what is known: a total with a cost beats one without. */
  private setUsage(usage: UsageView | null | undefined): void {
    if (usage === null || usage === undefined) return;
    const known = this.header.usage;
    const merged: UsageView = { ...usage };
    if (merged.costUsd === undefined && known?.costUsd !== undefined) merged.costUsd = known.costUsd;
    if (known !== null && merged.inputTokens + merged.outputTokens === 0 && known.inputTokens + known.outputTokens > 0) {
      return; // an old daemon's zero total after the streamed ones
    }
    this.header.usage = merged;
    this.emitHeader();
  }

  /** Files changed by this run's successful write/edit records, in order. */
  recordedChanges(): ChangedFile[] {
    const changes: ChangedFile[] = [];
    for (const entry of this.entryList) {
      if (entry.kind !== 'toolCall' || entry.record === null || !entry.record.success) continue;
      const { toolName, output, inputs } = entry.record;
      if (toolName !== 'write_file' && toolName !== 'edit_file') continue;
      const path = typeof output.path === 'string' ? output.path : (inputs as Record<string, unknown>).path;
      if (typeof path !== 'string') continue;
      const change = toolName === 'write_file' && output.created === true ? 'added' : 'modified';
      changes.push({ path, change });
    }
    return mergeChangedFiles([], changes);
  }

  private finish(end: Omit<EndEntry, 'kind' | 'id'>): void {
    if (this.end !== null) {
      return;
    }
    end.changedFiles = mergeChangedFiles(this.recordedChanges(), end.changedFiles);
    this.add({ kind: 'end', id: 'end', ...end });
    this.header.phase = 'finished';
    this.emitHeader();
  }

  private add(entry: Entry): void {
    this.entryList.push(entry);
    this.entriesById.set(entry.id, entry);
    this.emit(entry, 'added');
  }

  private emit(entry: Entry, change: EntryChange): void {
    for (const listener of this.entryListeners) {
      listener(entry, change);
    }
  }

  private emitHeader(): void {
    for (const listener of this.headerListeners) {
      listener(this.header);
    }
  }
}

function storedStopReason(detail: RunDetail): StopReason {
  switch (detail.status) {
    case 'cancelled':
      return 'cancelled';
    case 'limit':
      // Both limits: the iteration count and the model's window.
      return detail.stopReason === 'context_exhausted' ? 'context_exhausted' : 'max_iterations';
    case 'failed':
    case 'interrupted':
      return 'error';
    default:
      return detail.stopReason === 'max_iterations' || detail.stopReason === 'cancelled'
        ? detail.stopReason
        : 'final_answer';
  }
}

/** One row per path: the first change of a path wins ("added" stays added after edits). */
export function mergeChangedFiles(first: readonly ChangedFile[], second: readonly ChangedFile[]): ChangedFile[] {
  const byPath = new Map<string, ChangedFile>();
  for (const file of [...first, ...second]) {
    const key = file.path.replace(/^\.\//, '');
    const known = byPath.get(key);
    if (known === undefined) byPath.set(key, { path: key, change: file.change });
    else if (file.change === 'deleted') byPath.set(key, { path: key, change: known.change === 'added' ? 'added' : 'deleted' });
  }
  return [...byPath.values()];
}

function structuredCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}
