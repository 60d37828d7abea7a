// The list of past conversations (`cleveragents/runs`, grouped by their continuation chains;
// undos and restores inside the conversation they went back on); choosing one reopens it.

import type { RunSummary } from '../protocol';
import { groupConversations } from '../shared/conversations';
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
    const conversations = groupConversations(runs);
    setText(this.count, conversations.length > 0 ? `(${conversations.length})` : '');
    setText(this.note, error ?? (loading && runs.length === 0 ? 'Loading…' : runs.length === 0 ? 'No runs yet.' : ''));
    this.note.classList.toggle('error', error !== null);
    const now = Date.now();
    // A batch's runs (`cleveragents batch`) make one group, where its newest run stands.
    const entries: HTMLLIElement[] = [];
    const groups = new Map<string, HTMLUListElement>();
    for (const { turns } of conversations) {
      const run = turns[turns.length - 1];
      if (run === undefined) continue;
      const item = el('li', {}, this.item(turns, now));
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

  /** A conversation's entry: named by its first prompt, opened at its newest turn. */
  private item(turns: readonly RunSummary[], now: number): HTMLButtonElement {
    const run = turns[turns.length - 1] as RunSummary;
    const first = turns.find((turn) => turn.kind === 'run') ?? run;
    const status = STATUS_WORDS[run.status];
    const prompts = turns.filter((turn) => turn.kind === 'run').length;
    const restores = turns.length - prompts;
    const meta = [relativeTime(run.startedAt, now)];
    if (prompts > 1) meta.push(plural(prompts, 'prompt'));
    meta.push(plural(turns.reduce((sum, turn) => sum + turn.toolCallCount, 0), 'tool call'));
    if (restores > 0) meta.push(plural(restores, 'restore'));
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
          'data-turns': String(turns.length),
          title: turns.map((turn) => turn.prompt).join('\n'),
        },
      },
      el('span', { className: 'history-icon', attrs: { 'aria-hidden': 'true' } }),
      el('span', { className: 'history-prompt', text: clip(first.prompt.replace(/\s+/g, ' '), 120) }),
      el('span', { className: 'history-meta', text: meta.join(' · ') }),
      el('span', { className: 'sr-only', text: `, ${status}` }),
    );
    if (run.runId === this.displayedRunId) button.setAttribute('aria-current', 'true');
    return button;
  }
}
