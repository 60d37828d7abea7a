// The runs panel's script. It talks to the extension host only through postMessage: the
// host sends its whole state when the page says `ready` (the page may be recreated at any
// time), then run events as they happen; the page sends the user's actions.

import type { DaemonStatus, HostMessage, Notice, RunTab, ThreadTurns, WebviewMessage } from '../shared/messages';
import { RunState, type InstructionFile, type PlanStep, type RunHeader, type RunSnapshot } from '../shared/runState';
import { el, required, setAttr, setText } from './dom';
import { Composer } from './composer';
import { ImageAttachments, renderRunImages } from './imageAttachments';
import { clip, formatUsage, instructionsLine, PLAN_MARKS, PLAN_STATUS_WORDS, snapshotLine, stopReasonTitle } from './format';
import { HistoryView } from './historyView';
import { drawTurnHeading, ThreadView } from './threadView';
import { TranscriptView } from './transcriptView';

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

/** What the page keeps across reloads besides the host's state. */
interface PageState {
  prompt: string;
  expanded: { runId: string; ids: string[] } | null;
  historyOpen: boolean;
  /** The prompts sent from this page, newest last (Up in an empty box recalls them). */
  sent: string[];
}

const vscode = acquireVsCodeApi();
const page: PageState = { prompt: '', expanded: null, historyOpen: true, sent: [], ...(vscode.getState() as Partial<PageState> | undefined) };

const root = document;
const form = required<HTMLFormElement>(root, '[data-testid="composer"]');
const prompt = required<HTMLTextAreaElement>(root, '[data-testid="prompt"]');
const runButton = required<HTMLButtonElement>(root, 'button[data-testid="run"]');
const newButton = required<HTMLButtonElement>(root, 'button[data-testid="new-conversation"]');
const liveHeading = required<HTMLElement>(root, '[data-testid="turn-live"] [data-testid="turn-heading"]');
const stopButton = required<HTMLButtonElement>(root, 'button[data-testid="stop"]');
const status = required<HTMLElement>(root, '[data-testid="status"]');
const statusActions = required<HTMLElement>(root, '[data-testid="status-actions"]');
const notice = required<HTMLElement>(root, '[data-testid="notice"]');
const runHeading = required<HTMLElement>(root, '[data-testid="run-heading"]');
const runMeta = required<HTMLElement>(root, '[data-testid="run-meta"]');
const runUsage = required<HTMLElement>(root, '[data-testid="run-usage"]');
const runTokens = required<HTMLElement>(root, '[data-testid="run-tokens"]');
const runCost = required<HTMLElement>(root, '[data-testid="run-cost"]');
const runInstructions = required<HTMLElement>(root, '[data-testid="run-instructions"]');
const runSnapshot = required<HTMLElement>(root, '[data-testid="run-snapshot"]');
const runPlan = required<HTMLElement>(root, '[data-testid="run-plan"]');
const planTitle = required<HTMLElement>(root, '[data-testid="plan-title"]');
const planSteps = required<HTMLOListElement>(root, '[data-testid="plan-steps"]');
const runTabs = required<HTMLElement>(root, '[data-testid="run-tabs"]');
const transcriptList = required<HTMLElement>(root, '[data-testid="transcript"]');
const transcriptEmpty = required<HTMLElement>(root, '[data-testid="transcript-empty"]');
const historyDetails = required<HTMLDetailsElement>(root, '[data-testid="history"]');
const announcer = required<HTMLElement>(root, '[data-testid="announcer"]');
const alertAnnouncer = required<HTMLElement>(root, '[data-testid="alert-announcer"]');

let daemon: DaemonStatus = { state: 'starting', message: 'Connecting…' };
let tabs: RunTab[] = [];
let run: RunState | null = null;
/** The other turns of the conversation on display. */
let thread: ThreadTurns = { before: [], after: [] };
/** Where Up is in `page.sent` while the user walks back through it (null: not walking). */
let recalled: number | null = null;
let stopHeaderListener: (() => void) | null = null;
let sentPrompt: string | null = null;
let statusFrame: number | null = null;

function post(message: WebviewMessage): void {
  vscode.postMessage(message);
}

function savePage(): void {
  vscode.setState(page);
}

const transcript = new TranscriptView(
  transcriptList,
  required<HTMLElement>(root, 'section.run'),
  required<HTMLElement>(root, '.scroll-anchor'),
  {
  approve: (requestId, decision) => post({ type: 'approve', requestId, decision }),
  announce: (text) => say(announcer, text),
  alert: (text) => say(alertAnnouncer, text),
  expansionChanged: (ids) => {
    page.expanded = run === null ? null : { runId: run.runId, ids };
    savePage();
  },
    rendered: () => {
      document.dispatchEvent(new CustomEvent('cleveragents:rendered'));
    },
    openFile: (path, line) => post({ type: 'openFile', path, line, runId: run?.runId ?? null }),
    openLink: (href) => post({ type: 'openLink', href }),
    copy: (text) => post({ type: 'copy', text }),
    showProposal: (requestId) => post({ type: 'showProposal', requestId }),
    showChange: (path) => {
      if (run !== null) post({ type: 'showChange', runId: run.runId, path });
    },
    restore: (iteration) => {
      if (run !== null) post({ type: 'restore', runId: run.runId, iteration });
    },
  },
);

const composer = new Composer(root, prompt, post, () => renderControls());
const attachedImages = new ImageAttachments(form, prompt, required<HTMLElement>(root, '[data-testid="image-chips"]'), () =>
  renderControls(),
);
const runImages = required<HTMLElement>(root, '[data-testid="run-images"]');

const threadView = new ThreadView(
  required<HTMLElement>(root, '[data-testid="thread-before"]'),
  required<HTMLElement>(root, '[data-testid="thread-after"]'),
  post,
);

const history = new HistoryView(
  required<HTMLUListElement>(root, '[data-testid="history-list"]'),
  required<HTMLElement>(root, '[data-testid="history-note"]'),
  required<HTMLElement>(root, '[data-testid="history-count"]'),
  (runId) => post({ type: 'openRun', runId }),
);

function say(region: HTMLElement, text: string): void {
  // Clearing first makes a repeated message count as a change.
  region.textContent = '';
  requestAnimationFrame(() => {
    region.textContent = text;
  });
}

// -- messages from the host ------------------------------------------------------------------

window.addEventListener('message', (event: MessageEvent) => {
  const message = event.data as HostMessage | undefined;
  if (message === undefined || typeof message !== 'object' || typeof message.type !== 'string') {
    return;
  }
  receive(message);
});

function receive(message: HostMessage): void {
  switch (message.type) {
    case 'state':
      daemon = message.state.daemon;
      tabs = message.state.runs;
      history.show(message.state.history);
      showRun(message.state.run, message.state.thread);
      break;
    case 'showRun':
      showRun(message.run, message.thread);
      break;
    case 'runEvents':
      if (run !== null && run.runId === message.runId) {
        for (const runEvent of message.events) {
          run.handle(runEvent);
        }
      }
      break;
    case 'daemon':
      daemon = message.daemon;
      break;
    case 'history':
      history.show(message.history);
      break;
    case 'activeRun':
      if (message.runId !== null && sentPrompt !== null && prompt.value === sentPrompt) {
        prompt.value = '';
        page.prompt = '';
        savePage();
        composer.clearContext();
        attachedImages.clear();
      }
      sentPrompt = null;
      break;
    case 'runs':
      tabs = message.runs;
      break;
    case 'notice':
      showNotice(message.notice);
      break;
    case 'focusPrompt':
      prompt.focus();
      break;
    case 'options':
      composer.showOptions(message.options);
      break;
    case 'context':
      composer.addContext(message.item);
      break;
    case 'files':
      composer.showFiles(message.query, message.paths);
      break;
    case 'commands':
      composer.showCommands(message.commands);
      break;
  }
  scheduleStatus();
}

function showRun(snapshot: RunSnapshot | null, turns: ThreadTurns): void {
  stopHeaderListener?.();
  stopHeaderListener = null;
  run = snapshot === null ? null : RunState.fromSnapshot(snapshot);
  thread = turns;
  threadView.show(turns.before, turns.after);
  const expanded = run !== null && page.expanded?.runId === run.runId ? page.expanded.ids : [];
  transcript.show(run, expanded);
  history.setDisplayed(run?.runId ?? null);
  if (run !== null) {
    stopHeaderListener = run.onHeader(() => scheduleStatus());
  }
  // The heading and the buttons change together: a heading that says "New conversation" over a
  // Run button still disabled for the previous run's turn would be a frame of lies.
  renderHeader();
  renderControls();
}

function showNotice(value: Notice | null): void {
  notice.hidden = value === null;
  setText(notice, value?.message ?? '');
  setAttr(notice, 'data-level', value?.level ?? null);
}

// -- drawing the controls and the status line --------------------------------------------------

function scheduleStatus(): void {
  if (statusFrame === null) {
    statusFrame = requestAnimationFrame(() => {
      statusFrame = null;
      renderHeader();
      renderTabs();
      renderControls();
      renderStatus();
    });
  }
}

function renderHeader(): void {
  transcriptEmpty.hidden = run !== null;
  runUsage.hidden = run === null;
  drawTurnHeading(liveHeading, run?.header ?? null);
  if (run === null) {
    setText(runHeading, 'New conversation');
    setText(runMeta, '');
    renderInstructions([]);
    renderPlan(null);
    renderRunImages(runImages, []);
    return;
  }
  const usage = formatUsage(run.header.usage);
  setText(runTokens, usage.tokens);
  setText(runCost, usage.cost);
  const header = run.header;
  // The conversation is named by its first prompt; each turn's own prompt heads the turn.
  const first = [...thread.before.map((turn) => turn.header), header].find((turn) => turn.kind === 'run') ?? header;
  setText(runHeading, first.prompt || header.runId);
  const meta: string[] = [];
  if (header.provider) meta.push(header.model ? `${header.provider} (${header.model})` : header.provider);
  if (header.automationProfile) meta.push(header.automationProfile);
  if (header.sandboxRoot) meta.push(header.sandboxRoot);
  const turns = thread.before.length + thread.after.length + 1;
  if (turns > 1) meta.push(`${turns} turns`);
  if (header.source === 'history') meta.push('from the history');
  setText(runMeta, meta.join(' · '));
  renderRunImages(runImages, header.images);
  renderInstructions(header.instructions);
  const checkpoint = snapshotLine(header.snapshot);
  runSnapshot.hidden = checkpoint === '';
  setText(runSnapshot, checkpoint);
  renderPlan(header.plan);
}

/** "Using AGENTS.md, 2 files", the paths in its tooltip. */
function renderInstructions(files: readonly InstructionFile[]): void {
  runInstructions.hidden = files.length === 0;
  const line = instructionsLine(files);
  setText(runInstructions, line.text);
  setAttr(runInstructions, 'title', line.title || null);
}

/** The plan as a checklist at the top of the run: redrawn whole, as the model sends it. */
function renderPlan(steps: readonly PlanStep[] | null): void {
  runPlan.hidden = steps === null || steps.length === 0;
  if (steps === null) {
    planSteps.replaceChildren();
    return;
  }
  const done = steps.filter((step) => step.status === 'done').length;
  setText(planTitle, `Plan · ${done} of ${steps.length} done`);
  planSteps.replaceChildren(
    ...steps.map((step) => {
      return el(
        'li',
        { className: 'plan-step', attrs: { 'data-status': step.status, 'data-testid': 'plan-step' } },
        el('span', { className: 'plan-mark', text: PLAN_MARKS[step.status], attrs: { 'aria-hidden': 'true' } }),
        el('span', { className: 'plan-text', text: step.text }),
        el('span', { className: 'sr-only', text: ` (${PLAN_STATUS_WORDS[step.status]})` }),
      );
    }),
  );
}

/** The run on display, when this client has it going. */
function displayedActive(): boolean {
  return run !== null && tabs.some((tab) => tab.runId === run?.runId && tab.active);
}

/** The run the next prompt continues: the conversation's newest finished run (a restore has
 * no conversation of its own); null: the prompt starts a new conversation. */
function continuedRun(): RunHeader | null {
  if (run === null) return null;
  const turns = [...thread.before.map((turn) => turn.header), run.header, ...thread.after.map((turn) => turn.header)];
  for (let index = turns.length - 1; index >= 0; index -= 1) {
    const turn = turns[index];
    if (turn !== undefined && turn.kind === 'run') return turn.phase === 'finished' ? turn : null;
  }
  return null;
}

function renderControls(): void {
  // Images alone are a prompt too ("what is wrong here?" is often all there is to say).
  const hasPrompt = prompt.value.trim() !== '' || attachedImages.images.length > 0;
  const going = displayedActive();
  // A turn still running is stopped (Escape) or waited for before the next prompt.
  runButton.disabled = !hasPrompt || going;
  setAttr(runButton, 'title', going ? 'The turn is still running: wait for it, or stop it (Escape)' : run === null ? 'Start a conversation' : 'Send as the next turn of this conversation');
  stopButton.disabled = !going;
  newButton.disabled = run === null;
}

function renderStatus(): void {
  status.setAttribute('data-daemon', daemon.state);
  const failed = daemon.state === 'failed';
  statusActions.hidden = !failed;
  if (failed || (run === null && daemon.state !== 'ready')) {
    // A daemon that cannot start matters more than the run on display: say so, with the fix.
    setText(status, daemon.message);
    status.setAttribute('data-state', failed ? 'error' : daemon.state);
    return;
  }
  if (run === null) {
    const going = tabs.filter((tab) => tab.active).length;
    setText(status, going > 1 ? `${going} runs are going.` : going === 1 ? 'A run is going.' : 'Ready.');
    status.setAttribute('data-state', 'ready');
    return;
  }
  if (run.finished) {
    const end = run.end;
    const title = end === null ? 'Finished' : stopReasonTitle(end.stopReason, run.header.maxIterations);
    setText(status, `${title}.`);
    status.setAttribute('data-state', end?.stopReason === 'error' ? 'error' : 'finished');
    return;
  }
  const counts = run.counts();
  if (counts.pendingApprovals > 0) {
    setText(status, 'Waiting for your approval.');
    status.setAttribute('data-state', 'approval');
    return;
  }
  if (run.header.phase === 'pending') {
    setText(status, 'Starting the run…');
    status.setAttribute('data-state', 'running');
    return;
  }
  const calls = `${counts.toolCalls} tool call${counts.toolCalls === 1 ? '' : 's'}`;
  const running = counts.running > 0 ? `, ${counts.running} running` : '';
  setText(status, `Running: iteration ${Math.max(counts.iterations, 1)}, ${calls}${running}.`);
  status.setAttribute('data-state', 'running');
}

// -- the user's actions ------------------------------------------------------------------------

function startRun(): void {
  const text = prompt.value.trim();
  if ((!text && attachedImages.images.length === 0) || displayedActive()) return;
  sentPrompt = prompt.value;
  if (text) page.sent = [...page.sent.filter((earlier) => earlier !== text), text].slice(-50);
  recalled = null;
  savePage();
  const context = composer.context;
  const images = attachedImages.images;
  const extra = { ...(context.length > 0 ? { context } : {}), ...(images.length > 0 ? { images } : {}) };
  const previous = continuedRun();
  post(previous === null ? { type: 'run', prompt: text, ...extra } : { type: 'continue', prompt: text, runId: previous.runId, ...extra });
}

form.addEventListener('submit', (event) => {
  event.preventDefault();
  startRun();
});

prompt.addEventListener('keydown', (event) => {
  // The completion list took the key (Enter/Tab chose, Escape closed it).
  if (event.defaultPrevented || event.isComposing) return;
  if (event.key === 'Enter' && !event.shiftKey && !event.altKey) {
    event.preventDefault();
    startRun();
  } else if (event.key === 'ArrowUp' && (prompt.value === '' || recalled !== null) && page.sent.length > 0) {
    event.preventDefault();
    recalled = recalled === null ? page.sent.length - 1 : Math.max(0, recalled - 1);
    prompt.value = page.sent[recalled] ?? '';
    page.prompt = prompt.value;
    savePage();
    renderControls();
  } else if (event.key === 'ArrowDown' && recalled !== null) {
    // Back towards the newest; past it, the box is empty again.
    event.preventDefault();
    recalled = recalled + 1 < page.sent.length ? recalled + 1 : null;
    prompt.value = recalled === null ? '' : (page.sent[recalled] ?? '');
    page.prompt = prompt.value;
    savePage();
    renderControls();
  } else if (event.key === 'Escape' && displayedActive()) {
    event.preventDefault();
    post({ type: 'stop', runId: run?.runId ?? null });
  }
});

prompt.addEventListener('input', () => {
  recalled = null;
  page.prompt = prompt.value;
  savePage();
  renderControls();
});

newButton.addEventListener('click', () => {
  post({ type: 'newConversation' });
  prompt.focus();
});

stopButton.addEventListener('click', () => post({ type: 'stop', runId: run?.runId ?? null }));

// -- the run list ------------------------------------------------------------------------------

let drawnTabs = '';
function renderTabs(): void {
  const key = JSON.stringify([tabs, run?.runId ?? null]);
  if (key === drawnTabs) return;
  drawnTabs = key;
  // One run and it is on display: the list would only repeat the heading.
  runTabs.hidden = tabs.length === 0 || (tabs.length === 1 && tabs[0]?.runId === run?.runId && !tabs[0]?.active);
  runTabs.replaceChildren(
    ...tabs.map((tab) => {
      const state = tab.pendingApprovals > 0 ? 'approval' : tab.active ? 'running' : (tab.stopReason ?? 'finished');
      const label = clip(tab.prompt || tab.runId, 40);
      const button = el(
        'button',
        {
          className: 'run-tab',
          attrs: {
            type: 'button',
            'data-testid': 'run-tab',
            'data-run-id': tab.runId,
            'data-state': state,
            'aria-current': String(tab.runId === run?.runId),
            'data-turns': String(tab.turns),
            title: `${tab.prompt}${tab.turns > 1 ? ` (${tab.turns} turns)` : ''}${tab.pendingApprovals > 0 ? ' (waiting for your approval)' : tab.active ? ' (running)' : ''}`,
          },
        },
        el('span', { className: 'run-tab-icon', attrs: { 'aria-hidden': 'true' } }),
        el('span', { className: 'run-tab-label', text: label }),
      );
      if (tab.pendingApprovals > 0) {
        button.append(el('span', { className: 'badge', text: String(tab.pendingApprovals), attrs: { 'aria-label': 'approvals waiting' } }));
      }
      if (!tab.active) return button;
      const stop = el('button', {
        className: 'run-tab-stop',
        text: '■',
        attrs: { type: 'button', 'data-testid': 'run-tab-stop', 'data-run-id': tab.runId, 'aria-label': `Stop "${label}"`, title: 'Stop this run' },
      });
      return el('span', { className: 'run-tab-group' }, button, stop);
    }),
  );
}

runTabs.addEventListener('click', (event) => {
  const button = (event.target as Element | null)?.closest('button');
  const runId = button?.getAttribute('data-run-id');
  if (button === null || button === undefined || !runId) return;
  if (button.getAttribute('data-testid') === 'run-tab-stop') post({ type: 'stop', runId });
  else if (runId !== run?.runId) post({ type: 'openRun', runId });
});

required<HTMLButtonElement>(root, '[data-testid="history-refresh"]').addEventListener('click', () =>
  post({ type: 'refreshHistory' }),
);

historyDetails.open = page.historyOpen;
historyDetails.addEventListener('toggle', () => {
  page.historyOpen = historyDetails.open;
  savePage();
});

statusActions.addEventListener('click', (event) => {
  const action = (event.target as Element | null)?.closest('button')?.getAttribute('data-action');
  if (action === 'showOutput' || action === 'openSettings' || action === 'restartDaemon') {
    post({ type: action });
  }
});

prompt.value = page.prompt;
renderHeader();
renderControls();
renderStatus();
post({ type: 'ready' });
