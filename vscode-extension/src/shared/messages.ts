// The messages between the extension host and the webview (`postMessage` both ways).

import type { PromptCommandInfo, RunSummary } from '../protocol';
import type { ApprovalDecision, RunEvent, RunSnapshot } from './runState';

/** How the daemon is doing, as the webview's status line shows it. */
export interface DaemonStatus {
  state: 'starting' | 'ready' | 'stopped' | 'failed';
  /** One line for the status line; for `failed`, what is wrong and how to fix it. */
  message: string;
}

export interface HistoryView {
  runs: RunSummary[];
  /** Set when the history could not be read. */
  error: string | null;
  loading: boolean;
}

/** The host's state the webview shows, sent whole when the webview (re)loads. */
export interface ViewState {
  daemon: DaemonStatus;
  history: HistoryView;
  /** The run on display, if any: the newest turn of the conversation on display. */
  run: RunSnapshot | null;
  /** The other turns of its conversation, oldest first. */
  thread: ThreadTurns;
  /** The newest run this client has going, if any (it may not be the one on display). */
  activeRunId: string | null;
  /** This session's runs, for the run list. */
  runs: RunTab[];
}

/** The turns of the conversation on display besides the run on display, oldest first. */
export interface ThreadTurns {
  before: RunSnapshot[];
  after: RunSnapshot[];
}

/** One conversation in the panel's list (this session's). */
export interface RunTab {
  /** Its newest turn (what opening it shows). */
  runId: string;
  /** Its first prompt. */
  prompt: string;
  /** How many turns (prompts and restores) it has. */
  turns: number;
  active: boolean;
  pendingApprovals: number;
  stopReason: string | null;
}

export type HostMessage =
  | { type: 'state'; state: ViewState }
  | { type: 'showRun'; run: RunSnapshot | null; thread: ThreadTurns }
  | { type: 'runEvents'; runId: string; events: RunEvent[] }
  | { type: 'daemon'; daemon: DaemonStatus }
  | { type: 'history'; history: HistoryView }
  /** A run this client started (runId) or one that ended (null). */
  | { type: 'activeRun'; runId: string | null }
  | { type: 'runs'; runs: RunTab[] }
  | { type: 'notice'; notice: Notice | null }
  | { type: 'focusPrompt' }
  | { type: 'options'; options: RunOptionsView }
  | { type: 'context'; item: ContextItem }
  | { type: 'files'; query: string; paths: string[] }
  /** The custom commands for `/` completion (`cleveragents/listCommands`). */
  | { type: 'commands'; commands: PromptCommandInfo[] };

/** Context attached to the prompt (sent as a `RunResource`). */
export interface ContextItem {
  /** Absolute path of a workspace file. */
  path: string;
  /** A selection or an unsaved buffer; null: the daemon reads the file. */
  text: string | null;
  startLine: number | null;
  endLine: number | null;
  /** What the chip says. */
  label: string;
}

/** An image attached to the prompt (sent as a `RunImage`; docs/images.md). */
export interface ImageItem {
  name: string;
  /** What the browser says it is; the daemon decides from the bytes. */
  mediaType: string;
  /** The bytes, base64-encoded. */
  data: string;
}

/** The run options the panel shows: what is picked (or the setting) and where it comes from. */
export interface RunOptionsView {
  provider: string;
  model: string;
  automationProfile: string;
  providers: readonly string[];
  profiles: readonly string[];
  /** The settings' values, shown as the defaults. */
  defaults: { provider: string; model: string; automationProfile: string };
}

/** A one-off message for the user (a refused run, a failed request). */
export interface Notice {
  level: 'info' | 'error';
  message: string;
}

export type WebviewMessage =
  | { type: 'ready' }
  | { type: 'run'; prompt: string; context?: ContextItem[]; images?: ImageItem[] }
  | { type: 'continue'; prompt: string; runId: string; context?: ContextItem[]; images?: ImageItem[] }
  | { type: 'setOptions'; options: { provider: string; model: string; automationProfile: string } }
  | { type: 'addContext'; what: 'selection' | 'file' }
  /** @ completion in the prompt box. */
  | { type: 'findFiles'; query: string }
  | { type: 'mention'; path: string }
  /** `/` typed at the start of the prompt box: the custom commands, please. */
  | { type: 'listCommands' }
  /** "New": the next prompt starts a conversation of its own. */
  | { type: 'newConversation' }
  /** Stop this run (null: the one on display). */
  | { type: 'stop'; runId: string | null }
  | { type: 'approve'; requestId: string; decision: ApprovalDecision }
  | { type: 'openRun'; runId: string }
  | { type: 'refreshHistory' }
  | { type: 'restartDaemon' }
  | { type: 'showOutput' }
  | { type: 'openSettings' }
  /** A path in a record or an answer; relative paths are against the run's folder. */
  | { type: 'openFile'; path: string; line: number | null; runId: string | null }
  | { type: 'openLink'; href: string }
  | { type: 'copy'; text: string }
  /** Open the diff of a pending file-change approval again. */
  | { type: 'showProposal'; requestId: string }
  /** A changed file of a run: before the run vs now. */
  | { type: 'showChange'; runId: string; path: string }
  /** Undo a run (iteration null) or restore its folder to before an iteration. */
  | { type: 'restore'; runId: string; iteration: number | null };
