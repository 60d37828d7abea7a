// The list of past runs (`cleveragents/runs`); choosing one reopens it.

import type { RunSummary } from '../protocol';
import type { HistoryView as HistoryData } from '../shared/messages';
import { el, setAttr, setText } from './dom';
import { clip, plural, relativeTime } from './format';

const STATUS_WORDS: Record<RunSummary['status'], string> = {
  running: 'running',
  finished: 'finished',
  cancelled: 'stopped',
  limit: 'stopped at the iteration limit',
  failed: 'failed',
  interrupted: 'interrupted',
};

export class HistoryView {
  private data: HistoryData = { runs: [], error: null, loading: false };
  private displayedRunId: string | null = null;

  constructor(
    private readonly list: HTMLUListElement,
    private readonly note: HTMLElement,
    private readonly count: HTMLElement,
    private readonly open: (runId: string) => void,
  ) {
    list.addEventListener('click', (event) => {
      const item = (event.target as Element | null)?.closest<HTMLElement>('[data-testid="history-item"]');
      const runId = item?.getAttribute('data-run-id');
      if (runId) this.open(runId);
    });
  }

  show(data: HistoryData): void {
    this.data = data;
    this.render();
  }

  setDisplayed(runId: string | null): void {
    this.displayedRunId = runId;
    for (const item of this.list.querySelectorAll('[data-testid="history-item"]')) {
      setAttr(item, 'aria-current', item.getAttribute('data-run-id') === runId ? 'true' : null);
    }
    this.revealDisplayed();
  }

  private render(): void {
    const { runs, error, loading } = this.data;
    setText(this.count, runs.length > 0 ? `(${runs.length})` : '');
    setText(this.note, error ?? (loading && runs.length === 0 ? 'Loading…' : runs.length === 0 ? 'No runs yet.' : ''));
    this.note.classList.toggle('error', error !== null);
    const now = Date.now();
    // A batch's runs (`cleveragents batch`) make one group, where its newest run stands.
    const entries: HTMLLIElement[] = [];
    const groups = new Map<string, HTMLUListElement>();
    for (const run of runs) {
      const item = el('li', {}, this.item(run, now));
      const batchId = run.batch?.batchId;
      if (!batchId) {
        entries.push(item);
        continue;
      }
      let group = groups.get(batchId);
      if (group === undefined) {
        group = el('ul', { className: 'history-list history-batch-runs' });
        groups.set(batchId, group);
        const size = runs.filter((other) => other.batch?.batchId === batchId).length;
        entries.push(
          el(
            'li',
            { className: 'history-batch', attrs: { 'data-testid': 'history-batch', 'data-batch-id': batchId } },
            el('details', {}, el('summary', { className: 'history-batch-title', text: `Batch ${batchId} · ${plural(size, 'run')}` }), group),
          ),
        );
      }
      group.append(item);
    }
    this.list.replaceChildren(...entries);
    this.revealDisplayed();
  }

  /** Opens the batch group holding the displayed run, so its highlight shows. */
  private revealDisplayed(): void {
    this.list.querySelector('[aria-current="true"]')?.closest('details')?.setAttribute('open', '');
  }

  private item(run: RunSummary, now: number): HTMLButtonElement {
    const status = STATUS_WORDS[run.status];
    // A restore of a folder is an entry of its own: it made no tool calls.
    const meta = [relativeTime(run.startedAt, now), run.kind === 'restore' ? 'restore' : plural(run.toolCallCount, 'tool call')];
    if (run.continuedFrom) meta.push('follow-up');
    if (run.batch) meta.push(`${run.batch.taskId}@${run.batch.config}`);
    const button = el(
      'button',
      {
        className: 'history-item',
        attrs: {
          type: 'button',
          'data-testid': 'history-item',
          'data-run-id': run.runId,
          'data-status': run.status,
          title: run.prompt,
        },
      },
      el('span', { className: 'history-icon', attrs: { 'aria-hidden': 'true' } }),
      el('span', { className: 'history-prompt', text: clip(run.prompt.replace(/\s+/g, ' '), 120) }),
      el('span', { className: 'history-meta', text: meta.join(' · ') }),
      el('span', { className: 'sr-only', text: `, ${status}` }),
    );
    if (run.runId === this.displayedRunId) button.setAttribute('aria-current', 'true');
    return button;
  }
}
