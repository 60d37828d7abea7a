// Draws a RunState as the transcript list, incrementally.
//
// Changes are only noted as they come; the DOM is touched once per animation frame, and a
// frame stops after FRAME_BUDGET_MS so a burst of thousands of rows (or a big run reopened)
// is spread over several frames and the panel stays responsive. Rows go into chunks of
// CHUNK_ROWS, and the browser skips the rendering of chunks out of view (`content-visibility:
// auto` on each chunk; on each row, the per-element visibility checks cost more than they
// saved). Inputs and outputs are pretty-printed only when a row is expanded.
//
// Following the newest row is left to the browser: the scroller's only scroll anchor is an
// element after the list (see webview.css), so while the user is at the bottom the browser
// keeps it in view as rows are added. When they scroll up, the anchor is switched off (Chrome
// would otherwise keep it in view from anywhere), and back on at the bottom. Anchoring does
// nothing at scroll offset 0, so each run is scrolled to its anchor once, when it first
// overflows. Reading the layout in every frame instead doubled the time a 5,000-row burst
// took to draw.
//
// The list is a polite live region for added rows; while a backlog of more than
// BUSY_BACKLOG rows is drawn it is marked busy, so a reopened run is not read out row by row.

import type {
  ApprovalDecision,
  ApprovalState,
  EndEntry,
  Entry,
  EntryChange,
  GapEntry,
  IterationEntry,
  RunState,
  ToolCallEntry,
} from '../shared/runState';
import { el, setAttr, setText } from './dom';
import { formatDuration, inputPath, inputSummary, plural, prettyJson, stopReasonTitle } from './format';
import { pathLink, renderMarkdown } from './markdown';

const FRAME_BUDGET_MS = 6;
const FILE_TOOLS = new Set(['write_file', 'edit_file']);
const BOTTOM_SLACK_PX = 40;
const CHUNK_ROWS = 50;
const BUSY_BACKLOG = 50;

export interface TranscriptCallbacks {
  approve(requestId: string, decision: ApprovalDecision): void;
  /** Polite screen-reader announcement. */
  announce(text: string): void;
  /** Assertive announcement (approvals, the end of a run). */
  alert(text: string): void;
  /** The set of expanded rows changed (to keep it across reloads). */
  expansionChanged(expanded: string[]): void;
  /** Every queued change is on screen. */
  rendered(): void;
  /** A workspace path was clicked (the host checks it and opens it). */
  openFile(path: string, line: number | null): void;
  /** An http(s) or mailto link was clicked. */
  openLink(href: string): void;
  copy(text: string): void;
  /** Open the diff of a pending file change again. */
  showProposal(requestId: string): void;
  /** Open a changed file's diff (before the run vs now). */
  showChange(path: string): void;
  /** Undo the run (iteration null) or restore its folder to before an iteration. */
  restore(iteration: number | null): void;
}

interface ToolRow {
  entry: ToolCallEntry;
  element: HTMLElement;
  toggle: HTMLButtonElement;
  name: HTMLSpanElement;
  summary: HTMLSpanElement;
  statusText: HTMLSpanElement;
  duration: HTMLSpanElement;
  errorKind: HTMLSpanElement;
  /** Inputs and output; made on the first expansion. */
  details: HTMLDivElement | null;
  approval: HTMLDivElement | null;
  approvalState: ApprovalState | null;
  /** The record (or inputs) the details were drawn from; redrawn when it changes. */
  detailsOf: unknown;
}

export class TranscriptView {
  private state: RunState | null = null;
  private unsubscribe: (() => void) | null = null;
  private readonly queue: Entry[] = [];
  private readonly dirty = new Set<Entry>();
  private readonly rows = new Map<string, HTMLElement>();
  private readonly toolRows = new Map<string, ToolRow>();
  private expanded = new Set<string>();
  private frame: number | null = null;
  private rowCounter = 0;
  private chunk: HTMLElement | null = null;
  /** The view follows the newest row through scroll anchoring (set once it overflows). */
  private anchored = false;
  /** The user is at the bottom: keep following. */
  private follow = true;
  private lastScrollTop = 0;
  private lastScrollHeight = 0;
  /** A catch-up jump waits for its frame. */
  private catchingUp = false;
  private finishedSince = { done: 0, failed: 0 };
  private announceTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly list: HTMLElement,
    private readonly scroller: HTMLElement,
    private readonly anchor: HTMLElement,
    private readonly callbacks: TranscriptCallbacks,
  ) {
    this.list.addEventListener('click', (event) => this.onClick(event));
    this.list.addEventListener('keydown', (event) => {
      const target = event.target as Element | null;
      if (event.key === 'Enter' && target?.matches('a.path-link')) {
        (target as HTMLElement).click();
      }
    });
    this.scroller.addEventListener('scroll', () => this.onScroll(), { passive: true });
  }

  private onScroll(): void {
    const { scrollTop, clientHeight, scrollHeight } = this.scroller;
    const atBottom = scrollTop + clientHeight >= scrollHeight - BOTTOM_SLACK_PX;
    const movedUp = scrollTop < this.lastScrollTop - 1;
    // The browser also moves the view up by itself, when rows above it shrink (off-screen
    // chunks laid out with their real size): the list's height changes with that move.
    const resized = scrollHeight !== this.lastScrollHeight;
    this.lastScrollTop = scrollTop;
    this.lastScrollHeight = scrollHeight;
    if (atBottom) {
      this.setFollow(true);
    } else if (movedUp && !resized) {
      // Only the reader (wheel, keys, scroll bar, focus) moving up stops following.
      this.setFollow(false);
    } else if (movedUp && this.follow && this.queue.length === 0 && !this.catchingUp) {
      this.catchUp(10);
    }
  }

  private setFollow(follow: boolean): void {
    if (follow !== this.follow) {
      this.follow = follow;
      this.anchor.classList.toggle('off', !follow);
    }
  }

  /** Shows `state` (or nothing), from scratch. */
  show(state: RunState | null, expanded: readonly string[] = []): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.state = state;
    this.queue.length = 0;
    this.dirty.clear();
    this.rows.clear();
    this.toolRows.clear();
    this.expanded = new Set(expanded);
    this.list.replaceChildren();
    this.chunk = null;
    this.anchored = false;
    this.follow = true;
    this.lastScrollTop = 0;
    this.lastScrollHeight = 0;
    this.anchor.classList.remove('off');
    if (state === null) {
      this.flushNow();
      return;
    }
    this.queue.push(...state.entries);
    this.unsubscribe = state.onEntry((entry, change) => {
      if (change === 'added') {
        this.queue.push(entry);
      } else if (this.rows.has(entry.id)) {
        this.dirty.add(entry);
      }
      this.noteForAnnouncement(entry, change);
      this.schedule();
    });
    this.schedule();
  }

  expandedIds(): string[] {
    return [...this.expanded];
  }

  // -- frames --------------------------------------------------------------------------------

  private schedule(): void {
    if (this.frame === null) {
      this.frame = requestAnimationFrame(() => {
        this.frame = null;
        this.render();
      });
    }
  }

  private flushNow(): void {
    if (this.frame !== null) {
      cancelAnimationFrame(this.frame);
      this.frame = null;
    }
    this.callbacks.rendered();
  }

  private render(): void {
    const start = performance.now();
    if (this.queue.length > BUSY_BACKLOG) {
      setAttr(this.list, 'aria-busy', 'true');
    }
    for (const entry of this.dirty) {
      this.update(entry);
    }
    this.dirty.clear();
    let taken = 0;
    while (taken < this.queue.length) {
      const entry = this.queue[taken];
      taken += 1;
      if (entry !== undefined && !this.rows.has(entry.id)) {
        this.currentChunk().append(this.create(entry));
      }
      if (taken % 8 === 0 && performance.now() - start > FRAME_BUDGET_MS) {
        break;
      }
    }
    this.queue.splice(0, taken);
    if (!this.anchored && this.follow) {
      this.anchor.scrollIntoView({ block: 'end' });
      this.anchored = this.scroller.scrollTop > 0;
    }
    if (this.queue.length > 0 || this.dirty.size > 0) {
      this.schedule();
      return;
    }
    setAttr(this.list, 'aria-busy', null);
    // Once per drained queue (not per frame): if the browser's anchoring lost the bottom (a
    // row's height changed above the fold as its markdown was redrawn), catch up.
    this.catchUp(10);
    this.callbacks.rendered();
  }

  /**
   * While following, make sure the bottom is in view once the queue is drained. Off-screen
   * chunks are laid out with a guessed size, so one jump may land short of the bottom: the
   * check repeats for a few frames (a layout read per frame only then, not while streaming).
   */
  private catchUp(attempts: number): void {
    if (!this.follow || attempts <= 0) return;
    const { scrollTop, clientHeight, scrollHeight } = this.scroller;
    if (scrollTop + clientHeight >= scrollHeight - BOTTOM_SLACK_PX) return;
    this.anchor.scrollIntoView({ block: 'end' });
    this.catchingUp = true;
    requestAnimationFrame(() => {
      this.catchingUp = false;
      if (this.frame === null && this.queue.length === 0) this.catchUp(attempts - 1);
    });
  }

  private currentChunk(): HTMLElement {
    if (this.chunk === null || this.chunk.childElementCount >= CHUNK_ROWS) {
      this.chunk = el('div', { className: 'chunk', attrs: { role: 'none' } });
      this.list.append(this.chunk);
    }
    return this.chunk;
  }

  // -- rows ----------------------------------------------------------------------------------

  private create(entry: Entry): HTMLElement {
    let element: HTMLElement;
    switch (entry.kind) {
      case 'iteration':
        element = this.createIteration(entry);
        break;
      case 'text':
        element = el('div', {
          className: 'row assistant-text markdown',
          attrs: { role: 'listitem', 'data-testid': 'assistant-text' },
        });
        element.append(renderMarkdown(entry.text));
        break;
      case 'toolCall':
        element = this.createToolCall(entry);
        break;
      case 'gap':
        element = this.createGap(entry);
        break;
      case 'end':
        element = this.createEnd(entry);
        break;
    }
    this.rows.set(entry.id, element);
    return element;
  }

  private update(entry: Entry): void {
    if (entry.kind === 'text') {
      const row = this.rows.get(entry.id);
      if (row !== undefined) row.replaceChildren(renderMarkdown(entry.text));
    } else if (entry.kind === 'toolCall') {
      const row = this.toolRows.get(entry.id);
      if (row !== undefined) this.updateToolCall(entry, row);
    } else if (entry.kind === 'iteration') {
      const row = this.rows.get(entry.id);
      if (row !== undefined) {
        const fresh = this.createIteration(entry);
        row.replaceWith(fresh);
        this.rows.set(entry.id, fresh);
      }
    } else if (entry.kind === 'end') {
      const row = this.rows.get(entry.id);
      if (row !== undefined) {
        const fresh = this.createEnd(entry);
        row.replaceWith(fresh);
        this.rows.set(entry.id, fresh);
      }
    }
  }

  private createIteration(entry: IterationEntry): HTMLElement {
    const row = el(
      'div',
      {
        className: 'row iteration',
        attrs: { role: 'listitem', 'data-testid': 'iteration', 'data-iteration': String(entry.iteration) },
      },
      el('span', { text: `Iteration ${entry.iteration}` }),
    );
    if (entry.restorable) {
      row.append(
        el('button', {
          className: 'link restore',
          text: 'Restore to before this step',
          attrs: {
            type: 'button',
            'data-testid': 'restore-iteration',
            'data-iteration': String(entry.iteration),
            title: `Put the folder back as it was before iteration ${entry.iteration} (shows the files first)`,
          },
        }),
      );
    }
    return row;
  }

  private createGap(entry: GapEntry): HTMLElement {
    const first = entry.missing[0] ?? 0;
    const last = entry.missing[entry.missing.length - 1] ?? first;
    const range = first === last ? `#${first}` : `#${first} to #${last}`;
    return el('div', {
      className: 'row gap',
      attrs: { 'data-testid': 'gap', role: 'listitem' },
      text: `${plural(entry.missing.length, 'update')} from the daemon never arrived (${range}); the rows after this come from the run's final result.`,
    });
  }

  private createEnd(entry: EndEntry): HTMLElement {
    const state = this.state;
    const isRestore = state?.header.kind === 'restore';
    const title = isRestore ? 'Restored' : stopReasonTitle(entry.stopReason, state?.header.maxIterations ?? null);
    const counts = state?.counts();
    const parts = isRestore
      ? [plural(entry.changedFiles.length, 'file') + ' changed']
      : [plural(entry.iterations, 'iteration'), plural(entry.toolCalls, 'tool call')];
    if (counts !== undefined && counts.failed > 0) parts.push(`${counts.failed} failed`);
    if (entry.usage !== null && entry.usage.inputTokens + entry.usage.outputTokens > 0) {
      parts.push(plural(entry.usage.inputTokens + entry.usage.outputTokens, 'token'));
    }
    const element = el(
      'div',
      {
        className: `row run-end ${entry.stopReason}`,
        attrs: { role: 'listitem', 'data-testid': 'run-end', 'data-stop-reason': entry.stopReason },
      },
      el(
        'div',
        { className: 'end-title' },
        el('span', { className: 'end-icon', attrs: { 'aria-hidden': 'true' } }),
        el('span', { text: title }),
      ),
      el('p', { className: 'end-summary', text: parts.join(' · ') }),
    );
    if (entry.error) {
      element.append(el('p', { className: 'end-error', text: entry.error, attrs: { 'data-testid': 'run-error' } }));
    }
    if (entry.undoable) {
      const restore = state?.header.kind === 'restore';
      element.append(
        el(
          'div',
          { className: 'end-actions' },
          el('button', {
            className: 'secondary',
            text: restore ? 'Undo this restore' : 'Undo this run',
            attrs: {
              type: 'button',
              'data-testid': 'undo-run',
              title: restore
                ? 'Put the folder back as it was before this restore (shows the files first)'
                : 'Put the folder back as it was before this run (shows the files first)',
            },
          }),
        ),
      );
    }
    if (entry.checkpointWarning) {
      element.append(el('p', { className: 'end-warning', text: entry.checkpointWarning, attrs: { 'data-testid': 'checkpoint-warning' } }));
    }
    if (entry.changedFiles.length > 0) {
      element.append(
        el('div', { className: 'detail-label', text: `Changed files (${entry.changedFiles.length})` }),
        el(
          'ul',
          { className: 'changed-files', attrs: { 'data-testid': 'changed-files' } },
          ...entry.changedFiles.map((file) =>
            el(
              'li',
              {},
              el('button', {
                className: 'link',
                text: file.path,
                attrs: {
                  type: 'button',
                  'data-testid': 'changed-file',
                  'data-path': file.path,
                  'data-change': file.change,
                  title: `Show the diff of ${file.path} (before the run vs now)`,
                },
              }),
              el('span', { className: `change-kind ${file.change}`, text: file.change }),
            ),
          ),
        ),
      );
    }
    if (entry.content && entry.content.trim() !== this.lastText().trim()) {
      const content = el('div', { className: 'end-content markdown', attrs: { 'data-testid': 'run-content' } });
      content.append(renderMarkdown(entry.content));
      element.append(content);
    }
    return element;
  }

  private lastText(): string {
    const entries = this.state?.entries ?? [];
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const entry = entries[i];
      if (entry?.kind === 'text') return entry.text;
      if (entry?.kind === 'toolCall') return '';
    }
    return '';
  }

  private createToolCall(entry: ToolCallEntry): HTMLElement {
    const name = el('span', { className: 'tool-name' });
    const summary = el('span', { className: 'tool-summary' });
    const statusText = el('span', { className: 'sr-only' });
    const toggle = el(
      'button',
      {
        className: 'tool-toggle',
        attrs: { type: 'button', 'data-testid': 'tool-call-toggle', 'aria-expanded': 'false' },
      },
      el('span', { className: 'status-icon', attrs: { 'aria-hidden': 'true' } }),
      name,
      summary,
      statusText,
    );
    const duration = el('span', { className: 'tool-duration', attrs: { 'data-testid': 'tool-call-duration' } });
    const path = inputPath(entry.inputs);
    const open = path === null ? null : pathLink(path, null, 'open');
    const errorKind = el('span', { className: 'tool-error-kind', attrs: { 'data-testid': 'tool-call-error-kind' } });
    const element = el(
      'div',
      { className: 'row tool-call', attrs: { role: 'listitem', 'data-testid': 'tool-call', 'data-entry-id': entry.id } },
      toggle,
      open,
      duration,
      errorKind,
    );
    const row: ToolRow = {
      entry,
      element,
      toggle,
      name,
      summary,
      statusText,
      duration,
      errorKind,
      details: null,
      approval: null,
      approvalState: null,
      detailsOf: undefined,
    };
    this.toolRows.set(entry.id, row);
    this.updateToolCall(entry, row);
    return element;
  }

  private updateToolCall(entry: ToolCallEntry, row: ToolRow): void {
    const { element } = row;
    setAttr(element, 'data-call-id', entry.callId);
    setAttr(element, 'data-tool-name', entry.toolName);
    setAttr(element, 'data-status', entry.status);
    const kind = entry.status === 'failure' ? (entry.record?.errorKind ?? 'error') : null;
    setAttr(element, 'data-error-kind', kind);
    setText(row.name, entry.toolName);
    setText(row.summary, inputSummary(entry.inputs));
    setText(row.statusText, `, ${statusWords(entry)}`);
    setText(row.duration, entry.record === null ? '' : formatDuration(entry.record.durationMs));
    setText(row.errorKind, kind ?? '');
    this.updateApproval(entry, row);
    if (this.expanded.has(entry.id)) {
      this.setExpanded(entry, row, true);
    }
  }

  private updateApproval(entry: ToolCallEntry, row: ToolRow): void {
    const approval = entry.approval;
    if (approval === null) {
      return;
    }
    if (row.approval === null) {
      row.approval = this.createApproval(entry);
      if (row.details !== null) row.details.before(row.approval);
      else row.element.append(row.approval);
      row.approvalState = 'pending';
      // The inputs are what the user decides on: show them.
      this.expanded.add(entry.id);
      this.callbacks.expansionChanged(this.expandedIds());
      if (approval.state === 'pending') {
        this.callbacks.alert(`Approval needed: ${entry.toolName} ${inputSummary(entry.inputs)}`);
        queueMicrotask(() => this.focusApproval(row));
      }
    }
    if (row.approvalState !== approval.state || approval.state !== 'pending') {
      row.approvalState = approval.state;
      const block = row.approval;
      setAttr(block, 'data-state', approval.state);
      if (approval.state !== 'pending') {
        block.querySelector('.approval-buttons')?.remove();
        block.querySelector('.approval-note')?.remove();
        const label = block.querySelector('.approval-question');
        if (label !== null) setText(label, approvalOutcome(entry.toolName, approval.state));
      }
    }
  }

  private createApproval(entry: ToolCallEntry): HTMLDivElement {
    const approval = entry.approval;
    if (approval === null) throw new Error('no approval');
    this.rowCounter += 1;
    const labelId = `approval-label-${this.rowCounter}`;
    const why = approval.protected
      ? 'wants to write a protected path'
      : approval.executesCode
      ? 'wants to run a program'
      : approval.mutating
        ? 'wants to change the workspace'
        : 'needs your approval';
    const button = (testId: string, decision: ApprovalDecision, text: string, kind: string): HTMLButtonElement =>
      el('button', {
        className: kind,
        text,
        attrs: { type: 'button', 'data-testid': testId, 'data-decision': decision, 'data-request-id': approval.requestId },
      });
    return el(
      'div',
      {
        className: 'approval',
        attrs: {
          'data-testid': 'approval',
          'data-state': approval.state,
          'data-protected': String(approval.protected),
          role: 'group',
          'aria-labelledby': labelId,
          tabindex: '-1',
        },
      },
      el('p', {
        className: 'approval-question',
        text: `${entry.toolName} ${why}. ${approval.protected ? 'Allow it this once?' : 'Allow it?'}`,
        attrs: { id: labelId },
      }),
      approval.protected
        ? el('p', {
            className: 'approval-note',
            // Why there is no "for this run": each protected write is asked about on its own.
            text:
              'What is written there can run programs later, outside the sandbox (a git hook, ' +
              'git config, editor tasks), so it is asked every time.' +
              (approval.note === null ? '' : ` ${approval.note}`),
            attrs: { 'data-testid': 'approval-protected' },
          })
        : null,
      el(
        'div',
        { className: 'approval-buttons' },
        button('approve-allow', 'allow', 'Allow', 'primary'),
        button('approve-deny', 'deny', 'Deny', 'secondary'),
        approval.protected
          ? null
          : button('approve-allow-run', 'allow_for_run', `Allow ${entry.toolName} for this run`, 'secondary'),
        FILE_TOOLS.has(entry.toolName)
          ? el('button', {
              className: 'link',
              text: 'Show the diff',
              attrs: { type: 'button', 'data-testid': 'approval-diff', 'data-proposal': approval.requestId },
            })
          : null,
      ),
    );
  }

  private focusApproval(row: ToolRow): void {
    // Take the focus only from nothing or from the transcript, never from the prompt box.
    const active = document.activeElement;
    if (row.approval !== null && (active === null || active === document.body || this.list.contains(active))) {
      row.approval.focus();
    }
  }

  private setExpanded(entry: ToolCallEntry, row: ToolRow, expanded: boolean): void {
    setAttr(row.toggle, 'aria-expanded', String(expanded));
    row.element.classList.toggle('expanded', expanded);
    if (!expanded) {
      if (row.details !== null) row.details.hidden = true;
      return;
    }
    if (row.details === null) {
      this.rowCounter += 1;
      row.details = el('div', { className: 'tool-details', attrs: { id: `call-details-${this.rowCounter}` } });
      row.element.append(row.details);
      row.toggle.setAttribute('aria-controls', row.details.id);
    }
    row.details.hidden = false;
    const source = entry.record ?? entry.inputs;
    if (row.detailsOf === source) {
      return;
    }
    row.detailsOf = source;
    row.details.replaceChildren(...detailsContent(entry));
  }

  private onClick(event: MouseEvent): void {
    const target = event.target as Element | null;
    const link = target?.closest('a');
    if (link !== null && link !== undefined && this.list.contains(link)) {
      event.preventDefault();
      const path = link.getAttribute('data-path');
      const href = link.getAttribute('href');
      if (path !== null) {
        const line = Number(link.getAttribute('data-line'));
        this.callbacks.openFile(path, Number.isInteger(line) && line > 0 ? line : null);
      } else if (href !== null) {
        this.callbacks.openLink(href);
      }
      return;
    }
    const button = target?.closest('button');
    if (button === null || button === undefined || !this.list.contains(button)) {
      return;
    }
    const testId = button.getAttribute('data-testid');
    if (testId === 'approval-diff') {
      const requestId = button.getAttribute('data-proposal');
      if (requestId !== null) this.callbacks.showProposal(requestId);
      return;
    }
    if (testId === 'undo-run') {
      this.callbacks.restore(null);
      return;
    }
    if (testId === 'restore-iteration') {
      const iteration = Number(button.getAttribute('data-iteration'));
      if (Number.isInteger(iteration) && iteration > 0) this.callbacks.restore(iteration);
      return;
    }
    if (testId === 'changed-file') {
      const path = button.getAttribute('data-path');
      if (path !== null) this.callbacks.showChange(path);
      return;
    }
    if (testId === 'copy-code') {
      const code = button.parentElement?.querySelector('pre')?.textContent ?? '';
      this.callbacks.copy(code);
      setText(button, 'Copied');
      setTimeout(() => setText(button, 'Copy'), 1500);
      return;
    }
    if (testId === 'tool-call-toggle') {
      const id = button.closest('[data-testid="tool-call"]')?.getAttribute('data-entry-id');
      const row = id ? this.toolRows.get(id) : undefined;
      if (row === undefined) return;
      const { entry } = row;
      const expand = !this.expanded.has(entry.id);
      if (expand) this.expanded.add(entry.id);
      else this.expanded.delete(entry.id);
      this.setExpanded(entry, row, expand);
      this.callbacks.expansionChanged(this.expandedIds());
      return;
    }
    const requestId = button.getAttribute('data-request-id');
    const decision = button.getAttribute('data-decision') as ApprovalDecision | null;
    if (requestId !== null && decision !== null) {
      for (const sibling of button.parentElement?.querySelectorAll('button') ?? []) {
        sibling.disabled = true;
      }
      this.callbacks.approve(requestId, decision);
    }
  }

  // -- announcements -------------------------------------------------------------------------

  private noteForAnnouncement(entry: Entry, change: EntryChange): void {
    if (entry.kind === 'end' && change === 'added') {
      this.flushAnnouncement();
      const title = stopReasonTitle(entry.stopReason, this.state?.header.maxIterations ?? null);
      this.callbacks.alert(`Run ${title.toLowerCase()}. ${entry.error ?? ''}`.trim());
      return;
    }
    if (entry.kind === 'toolCall' && change === 'updated' && entry.record !== null) {
      this.finishedSince.done += 1;
      if (!entry.record.success) this.finishedSince.failed += 1;
      this.announceTimer ??= setTimeout(() => this.flushAnnouncement(), 1500);
    }
  }

  private flushAnnouncement(): void {
    if (this.announceTimer !== null) {
      clearTimeout(this.announceTimer);
      this.announceTimer = null;
    }
    const { done, failed } = this.finishedSince;
    this.finishedSince = { done: 0, failed: 0 };
    if (done > 0) {
      this.callbacks.announce(`${plural(done, 'tool call')} finished${failed > 0 ? `, ${failed} failed` : ''}.`);
    }
  }
}

function statusWords(entry: ToolCallEntry): string {
  if (entry.approval?.state === 'pending') return 'waiting for approval';
  switch (entry.status) {
    case 'running':
      return 'running';
    case 'success':
      return 'succeeded';
    case 'failure':
      return `failed: ${entry.record?.errorKind ?? 'error'}`;
  }
}

function approvalOutcome(toolName: string, state: ApprovalState): string {
  switch (state) {
    case 'allow':
      return `Allowed ${toolName}.`;
    case 'allow_for_run':
      return `Allowed ${toolName} for the rest of this run.`;
    case 'deny':
      return `Denied ${toolName}.`;
    case 'withdrawn':
      return `The daemon stopped waiting for an answer about ${toolName}.`;
    case 'cancel':
      return `Stopped: the run was stopped while it asked about ${toolName}; it did not run.`;
    case 'pending':
      return '';
  }
}

function detailsContent(entry: ToolCallEntry): Node[] {
  const nodes: Node[] = [
    el('div', { className: 'detail-label', text: 'Inputs' }),
    el('pre', { className: 'detail-json', text: prettyJson(entry.inputs), attrs: { 'data-testid': 'tool-call-inputs', tabindex: '0' } }),
  ];
  const record = entry.record;
  if (record === null) {
    nodes.push(
      el('div', { className: 'detail-label', text: 'Output' }),
      el('pre', { className: 'detail-json pending', text: 'Running…', attrs: { 'data-testid': 'tool-call-output', tabindex: '0' } }),
    );
  } else if (record.success) {
    nodes.push(
      el('div', { className: 'detail-label', text: 'Output' }),
      el('pre', { className: 'detail-json', text: prettyJson(record.output), attrs: { 'data-testid': 'tool-call-output', tabindex: '0' } }),
    );
  } else {
    const error = `${record.errorKind ?? 'error'}: ${record.error ?? 'no message'}`;
    const hasOutput = Object.keys(record.output).length > 0;
    nodes.push(
      el('div', { className: 'detail-label', text: 'Error' }),
      el('pre', {
        className: 'detail-json error',
        text: hasOutput ? `${error}\n\n${prettyJson(record.output)}` : error,
        attrs: { 'data-testid': 'tool-call-output', tabindex: '0' },
      }),
    );
  }
  return nodes;
}
