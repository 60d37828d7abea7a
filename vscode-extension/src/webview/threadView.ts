// The conversation on display as one thread: each turn's heading (the user's prompt, or what
// a restore put back) above its transcript. The turn on display (the newest, usually) is drawn
// live by main.ts's TranscriptView; the other turns are finished and drawn here, each by a
// TranscriptView of its own that never streams.

import type { WebviewMessage } from '../shared/messages';
import { RunState, type RunHeader, type RunSnapshot } from '../shared/runState';
import { el, setAttr, setText } from './dom';
import { renderRunImages } from './imageAttachments';
import { TranscriptView } from './transcriptView';

/** Fills a turn's heading: the user's prompt as a bubble, a restore as a line of its own. */
export function drawTurnHeading(heading: HTMLElement, header: RunHeader | null): void {
  heading.hidden = header === null;
  if (header === null) {
    setText(heading, '');
    return;
  }
  const restore = header.kind === 'restore';
  heading.className = restore ? 'turn-heading turn-restore' : 'turn-heading turn-prompt';
  setAttr(heading, 'data-kind', header.kind);
  setText(heading, restore ? `↶ ${header.prompt || 'Restore'}` : header.prompt);
  setAttr(heading, 'title', restore ? 'Files put back by an undo or a restore' : 'Your prompt');
}

export class ThreadView {
  private views: TranscriptView[] = [];

  constructor(
    private readonly before: HTMLElement,
    private readonly after: HTMLElement,
    private readonly post: (message: WebviewMessage) => void,
  ) {}

  show(before: readonly RunSnapshot[], after: readonly RunSnapshot[]): void {
    for (const view of this.views) view.show(null);
    this.views = [];
    this.before.replaceChildren(...before.map((snapshot) => this.turn(snapshot)));
    this.after.replaceChildren(...after.map((snapshot) => this.turn(snapshot)));
  }

  private turn(snapshot: RunSnapshot): HTMLElement {
    const state = RunState.fromSnapshot(snapshot);
    const runId = state.runId;
    const heading = el('div', { attrs: { 'data-testid': 'turn-heading' } });
    drawTurnHeading(heading, state.header);
    // The prompt's images under it, as the turn on display shows them (main.ts).
    const images = el('div', { className: 'run-images', attrs: { 'data-testid': 'turn-images' } });
    renderRunImages(images, state.header.images);
    const list = el('div', { className: 'transcript', attrs: { role: 'list', 'data-testid': 'turn-transcript' } });
    const anchor = el('div', { attrs: { 'aria-hidden': 'true' } });
    const turn = el(
      'div',
      { className: 'turn', attrs: { 'data-testid': 'turn', 'data-run-id': runId, 'data-kind': state.header.kind } },
      heading,
      images,
      list,
      anchor,
    );
    const post = this.post;
    // A finished turn: it scrolls with the thread, so it is its own (never scrolled) scroller.
    const view = new TranscriptView(list, turn, anchor, {
      approve: (requestId, decision) => post({ type: 'approve', requestId, decision }),
      announce: () => undefined,
      alert: () => undefined,
      expansionChanged: () => undefined,
      rendered: () => undefined,
      openFile: (path, line) => post({ type: 'openFile', path, line, runId }),
      openLink: (href) => post({ type: 'openLink', href }),
      copy: (text) => post({ type: 'copy', text }),
      showProposal: (requestId) => post({ type: 'showProposal', requestId }),
      showChange: (path) => post({ type: 'showChange', runId, path }),
      restore: (iteration) => post({ type: 'restore', runId, iteration }),
    });
    view.show(state);
    this.views.push(view);
    return turn;
  }
}
