// Generated from protocol/schema.json by `npm run generate:protocol`; do not edit by hand.
// The schema is generated from server/cleveragents/protocol/wire/.
/* eslint-disable */

/** The protocol version these types describe. */
export const PROTOCOL_VERSION = "1.3";

export const ApprovalDecisionValues = ["allow", "deny", "allow_for_run", "cancel"] as const;
export type ApprovalDecision = (typeof ApprovalDecisionValues)[number];

/** Sent by the daemon when the profile needs a human to approve a call. */
export interface ApproveToolCallParams {
  /** The run asking. */
  runId: string;
  /** The call waiting (see `toolCallStarted`). */
  callId: string;
  /** The tool. */
  toolName: string;
  /** The arguments it would run with. */
  inputs: { [key: string]: unknown };
  /** It changes the workspace. */
  mutating: boolean;
  /** It runs programs. */
  executesCode: boolean;
  /** The run's profile. */
  automationProfile: AutomationProfile;
  /** The iteration asking. */
  iteration: number;
  /** Why this call is asked about beyond the profile's rule, to show the user: e.g. the command would run unconfined (no bubblewrap here), and how to change that. */
  note?: string | null;
  /** About a protected write (code that could run later, outside the sandbox: a git hook, `core.fsmonitor`, editor tasks), before a file tool writes it or after a command wrote it (`note` says what; a no undoes it). Asked every time under every profile: `allow_for_run` allows it this once only, so offer allow and deny. */
  protected?: boolean;
}

export interface ApproveToolCallResult {
  /** `allow_for_run`: allow this tool without asking again in this run. `cancel`: stop the whole run (as `cleveragents/cancel` does); the call is recorded as cancelled. */
  decision: ApprovalDecision;
}

export const AutomationProfileValues = ["read-only", "ask", "auto-edit", "full-auto"] as const;
export type AutomationProfile = (typeof AutomationProfileValues)[number];

/** Sent when the model calls one of the client's tools, after any approval. Withdrawn with `$/cancelRequest` when the run is stopped or the tool's timeout passes. */
export interface CallClientToolParams {
  /** The run calling. */
  runId: string;
  /** The call (see `toolCallStarted`). */
  callId: string;
  /** The tool, as the client declared it. */
  name: string;
  /** The model's arguments, checked against the declared `inputSchema`. */
  arguments: { [key: string]: unknown };
  /** The iteration calling. */
  iteration: number;
}

/** The tool's result (the shape of an MCP tool result's text content). A JSON-RPC error answer, or a result of another shape, fails the call with the error in its record. */
export interface CallClientToolResult {
  /** Its text, in pieces joined with newlines. */
  content: ClientToolContent[];
  /** The tool failed; `content` says why (the record's error). */
  isError?: boolean | null;
}

/** Stop a run. The run's own request then returns with `stopReason: cancelled`. */
export interface CancelParams {
  /** The run to stop. */
  runId: string;
}

export interface CancelResult {
  /** True if the run was running and is now stopping; false if it was not. */
  cancelled: boolean;
}

export const ChangeKindValues = ["added", "modified", "deleted"] as const;
export type ChangeKind = (typeof ChangeKindValues)[number];

/** A file a run (or a restore) added, modified or deleted in its folder. */
export interface ChangedFile {
  /** Relative to the sandbox root, `/`-separated; ends in `/` for an empty folder. */
  path: string;
  /** added, modified or deleted. */
  change: ChangeKind;
  /** A file git does not see (ignored, or in a folder such as node_modules), kept by the checkpoints all the same. */
  ignored?: boolean;
}

/** A snapshot of a run's folder, taken just before an iteration first changed it. */
export interface Checkpoint {
  /** The iteration it was taken before: `cleveragents/restore` with this `iteration` brings the folder back to it. null on a restore's own checkpoint (the folder just before the restore; restoring without an iteration undoes the restore). */
  iteration: number | null;
  /** When it was taken (Unix epoch seconds). */
  createdAt: number;
  /** Files it does not hold (too large, unreadable), which a restore leaves. */
  note: string | null;
}

/** `capabilities.experimental.cleveragents` of `initialize` (all optional). */
export interface ClientCapability {
  /** The client answers `cleveragents/approveToolCall`. */
  approvals?: boolean | null;
  /** The client answers `cleveragents/trustWorkspace`. Without it, a workspace's `.mcp.json` servers start only once trusted some other way. */
  trust?: boolean | null;
  /** Tools the client serves (protocol 1.3): offered to every run of the session, whatever `tools` subset the run names; the client answers `cleveragents/callClientTool`. */
  tools?: ClientToolDeclaration[] | null;
}

/** A piece of the answer: text, which the model reads. */
export interface ClientToolContent {
  /** Only `text`. */
  type: "text";
  /** The text. */
  text: string;
}

/** A tool the client serves (`capabilities.experimental.cleveragents.tools`): offered to the model beside the daemon's own; each call is a `cleveragents/callClientTool` request. */
export interface ClientToolDeclaration {
  /** 1 to 64 letters, digits, `_` or `-`; not the name of one of the daemon's tools (`initialize` fails naming it). */
  name: string;
  /** What it does, for the model. Not empty. */
  description: string;
  /** JSON Schema of its arguments: an object schema (`type: object`). */
  inputSchema: { [key: string]: unknown };
  /** It changes nothing: runs without approval under `ask` and `auto-edit`, and under `read-only`. Default false: asked about as a tool that may change things. */
  readOnly?: boolean | null;
  /** How long a call may wait for the answer (more than 0, at most 600; default 30). Then the request is withdrawn (`$/cancelRequest`) and the call fails as a timeout. */
  timeoutSeconds?: number | null;
}

/** Ceilings on each `run_command`: a positive integer, or a string such as `"8G"` (sizes take K, M, G, T, powers of 1024) or `"unlimited"`. Unset ones keep theirs. */
export interface CommandLimits {
  /** The processes each command may use ([security.md](../docs/security.md#resource-limits)). Accepts: a whole number, sizes also `K`/`M`/`G`/`T` (powers of 1024), or `unlimited`. Default: `$CLEVERAGENTS_COMMAND_MAX_PROCESSES`, else 4096. */
  processes?: number | string | null;
  /** The file size each command may use ([security.md](../docs/security.md#resource-limits)). Accepts: a whole number, sizes also `K`/`M`/`G`/`T` (powers of 1024), or `unlimited`. Default: `$CLEVERAGENTS_COMMAND_MAX_FILE_SIZE`, else 4G. */
  fileSizeBytes?: number | string | null;
  /** The address space each command may use ([security.md](../docs/security.md#resource-limits)). Accepts: a whole number, sizes also `K`/`M`/`G`/`T` (powers of 1024), or `unlimited`. Default: `$CLEVERAGENTS_COMMAND_MAX_ADDRESS_SPACE`, else 32G. */
  addressSpaceBytes?: number | string | null;
  /** The CPU seconds each command may use ([security.md](../docs/security.md#resource-limits)). Accepts: a whole number, sizes also `K`/`M`/`G`/`T` (powers of 1024), or `unlimited`. Default: `$CLEVERAGENTS_COMMAND_MAX_CPU_SECONDS`, else 600 per core. */
  cpuSeconds?: number | string | null;
  /** The memory each command may use ([security.md](../docs/security.md#resource-limits)). Accepts: a whole number, sizes also `K`/`M`/`G`/`T` (powers of 1024), or `unlimited`. Default: `$CLEVERAGENTS_COMMAND_MAX_MEMORY`, else 3/4 of RAM. */
  memoryBytes?: number | string | null;
  /** The /tmp size each command may use ([security.md](../docs/security.md#resource-limits)). Accepts: a whole number, sizes also `K`/`M`/`G`/`T` (powers of 1024), or `unlimited`. Default: `$CLEVERAGENTS_COMMAND_TMP_SIZE`, else 2G. */
  tmpSizeBytes?: number | string | null;
  /** The free disk kept each command may use ([security.md](../docs/security.md#resource-limits)). Accepts: a whole number, sizes also `K`/`M`/`G`/`T` (powers of 1024), or `unlimited`. Default: `$CLEVERAGENTS_COMMAND_MIN_FREE_DISK`, else 2G. */
  minFreeDiskBytes?: number | string | null;
}

/** One message of a run's conversation, provider-neutral. */
export interface ConversationMessage {
  /** Who speaks. */
  role: "user" | "assistant" | "tool";
  /** user and assistant: the text; tool: null. */
  text: string | null;
  /** assistant: the calls it asked for; otherwise null. */
  toolCalls: RequestedToolCall[] | null;
  /** tool: the results sent back; otherwise null. */
  results: ToolResultContent[] | null;
}

export const ErrorKindValues = ["unknown_tool", "invalid_arguments", "validation_error", "execution_error", "timeout", "invalid_output", "denied", "cancelled", "sandbox_violation", "repeated_call"] as const;
export type ErrorKind = (typeof ErrorKindValues)[number];

export const FinishReasonValues = ["final_answer", "max_iterations", "cancelled", "context_exhausted", "error"] as const;
export type FinishReason = (typeof FinishReasonValues)[number];

export interface GetRunParams {
  /** The run to read back. */
  runId: string;
}

/** `initializationOptions` of `initialize`: the daemon's defaults for every run. API keys are never accepted here; they come only from the daemon's environment. */
export interface InitializationOptions {
  /** The LLM provider. Accepts: offline, replay, anthropic or openai. Default: `$CLEVERAGENTS_PROVIDER`, else `offline`. */
  provider?: string | null;
  /** The model name for the provider. Default: `$CLEVERAGENTS_MODEL`, else the provider's (`OPENAI_MODEL` for openai). */
  model?: string | null;
  /** What may run without asking. Accepts: read-only, ask, auto-edit or full-auto. Default: `$CLEVERAGENTS_PROFILE`, else `ask`. */
  automationProfile?: AutomationProfile | null;
  /** Model calls a run may make before it stops. Accepts: 1 to 1000. Default: `$CLEVERAGENTS_MAX_ITERATIONS`, else 25. */
  maxIterations?: number | null;
  /** The system prompt. Default: built in. */
  systemPrompt?: string | null;
  /** The provider's base URL (OpenAI-compatible servers, proxies). Default: `$CLEVERAGENTS_BASE_URL`, else the SDK's. */
  baseUrl?: string | null;
  /** The replay provider's JSON script. Default: `$CLEVERAGENTS_REPLAY_SCRIPT`, else none. */
  replayScript?: string | null;
  /** Tokens a model call may answer. Accepts: at least 1. Default: the provider's. */
  maxTokens?: number | null;
  /** Python modules whose @tool functions are added to the built-in tools. */
  toolModules?: string[] | null;
  /** Offer the built-in workspace tools. Default: true. */
  builtinTools?: boolean | null;
  /** Offer tools of installed `cleveragents.tools` entry points. Default: true. */
  pluginTools?: boolean | null;
  /** The client answers `cleveragents/approveToolCall`. Without it (here or in `capabilities.experimental.cleveragents.approvals`), calls that need approval are denied. */
  approvals?: boolean | null;
  /** A call whose approval (or a workspace-trust question) takes longer is denied. Default: 600. */
  approvalTimeoutSeconds?: number | null;
  /** Start every workspace's `.mcp.json` servers without asking ([security.md](../docs/security.md#mcp-servers-and-workspace-trust)). Default: `$CLEVERAGENTS_TRUST_WORKSPACE`, else off. */
  trustWorkspace?: boolean | null;
  /** Characters of one tool result the model is shown. Accepts: 1,000 to 10,000,000. Default: `$CLEVERAGENTS_TOOL_RESULT_BUDGET`, else 32,000. */
  toolResultBudget?: number | null;
  /** The model's context window, for models the table does not know. Accepts: 1,024 to 100,000,000. Default: `$CLEVERAGENTS_CONTEXT_WINDOW`, else the model table's, else 128,000. */
  contextWindow?: number | null;
  /** Send prompt-cache breakpoints ([tokens.md](../docs/tokens.md)). Default: `$CLEVERAGENTS_PROMPT_CACHING`, else on. */
  promptCaching?: boolean | null;
  /** Send the workspace's AGENTS.md / CLAUDE.md and the user's own to the model. Default: `$CLEVERAGENTS_PROJECT_INSTRUCTIONS`, else on. */
  projectInstructions?: boolean | null;
  /** Prices by model, merged model by model over the table. Accepts: `{"model": {"input", "output", "cacheWrite"?, "cacheRead"?}}`. Default: `$CLEVERAGENTS_PRICES`, else [the price table](../docs/tokens.md#prices-and-windows). */
  prices?: { [key: string]: unknown } | null;
  /** Folders run_command may also read (lists add up). Accepts: absolute or starting with ~ (the variable: separated by `:`). Default: `$CLEVERAGENTS_COMMAND_READ_PATHS`, else the system's. */
  commandReadPaths?: string[] | null;
  /** Variables run_command also passes on (lists add up). Accepts: names or patterns such as NODE_* (the variable: separated by commas). Default: `$CLEVERAGENTS_COMMAND_ENV`, else the core set. */
  commandEnv?: string[] | null;
  /** `run_command`'s limits, over $CLEVERAGENTS_COMMAND_MAX_* ones. */
  commandLimits?: CommandLimits | null;
  /** Where bubblewrap is missing, run commands unconfined under full-auto without asking. Default: `$CLEVERAGENTS_ALLOW_UNCONFINED_COMMANDS`, else asked. */
  allowUnconfinedCommands?: boolean | null;
  /** The access token of a daemon started with `--tcp` (required there: read it from the file the daemon names on stderr). Ignored over stdio and `--socket`. */
  token?: string | null;
}

/** A project instructions file (AGENTS.md, or CLAUDE.md where there is none) a run sends the model (docs/agents.md). */
export interface InstructionFile {
  /** Relative to the sandbox root (`/`-separated); the user's own file by its absolute path. */
  path: string;
  /** user: the user's own, for every project; project: the sandbox root's; folder: a subfolder's, for the files beneath it. */
  scope: "user" | "project" | "folder";
  /** The folder it governs, relative to the root (`.` for it); empty for user. */
  folder: string;
  /** The characters of it the model is sent. */
  chars: number;
  /** Its length; more than `chars` when it was cut. */
  totalChars: number;
  /** Whether it was cut to the size limit. */
  truncated: boolean;
}

/** An LLM call is about to be made. */
export interface IterationStartedParams {
  /** The run's id. */
  runId: string;
  /** Per-run sequence number. */
  seq: number;
  /** 1 for the first LLM call of the run. */
  iteration: number;
}

/** One model call's tokens and cost. */
export interface IterationUsage {
  /** The iteration (LLM call), from 1. */
  iteration: number;
  /** That call's tokens and cost. */
  usage: Usage;
}

/** The custom commands a run in a folder can be sent as `/name arguments`. */
export interface ListCommandsParams {
  /** The folder whose `.cleveragents/commands/` is read (with the user's). */
  sandboxRoot: string;
}

export interface ListCommandsResult {
  /** By name; a workspace's command hides the user's of the same name. */
  commands: PromptCommandInfo[];
}

/** A model's price in US dollars per million tokens. */
export interface ModelPrice {
  /** Uncached input. */
  input: number;
  /** Output. */
  output: number;
  /** Input written to the prompt cache. Default: `input`. */
  cacheWrite?: number | null;
  /** Input read from the prompt cache. Default: `input`. */
  cacheRead?: number | null;
}

/** The model set its plan (an `update_plan` call): the whole plan, to show as a checklist in place of the previous one. Sent right after that call's `toolCall` notification. */
export interface PlanParams {
  /** The run's id. */
  runId: string;
  /** Per-run sequence number. */
  seq: number;
  /** The iteration whose call set it. */
  iteration: number;
  /** The `update_plan` call that set it. */
  callId: string;
  /** Every step, in order. */
  steps: PlanStep[];
  /** Why the plan changed, if the model said. */
  explanation: string | null;
}

export const PlanStatusValues = ["pending", "in_progress", "done"] as const;
export type PlanStatus = (typeof PlanStatusValues)[number];

/** One step of the model's plan. */
export interface PlanStep {
  /** What the step does. */
  text: string;
  /** pending, in_progress (at most one) or done. */
  status: PlanStatus;
}

/** A custom command: a Markdown prompt file; `/name arguments` runs its prompt. */
export interface PromptCommandInfo {
  /** What follows the `/`. */
  name: string;
  /** Its front matter's `description`, or the file's first line. */
  description: string;
  /** What to type after the name (`argument-hint`); null: not said. */
  argumentHint: string | null;
  /** `workspace` (`.cleveragents/commands/`) or `user` (the config folder). */
  source: "workspace" | "user";
}

/** A tool call as the model asked for it, inside an assistant message. */
export interface RequestedToolCall {
  /** The call's id. */
  callId: string;
  /** The tool asked for. */
  toolName: string;
  /** The arguments as sent (any JSON). */
  arguments: unknown;
  /** Set when the model's argument text was not valid JSON. */
  parseError: string | null;
}

/** One row of the settings table (docs/settings.md) as resolved. */
export interface ResolvedSetting {
  /** The row's name, e.g. `max_iterations`. */
  name: string;
  /** Its environment variable, if it has one. */
  variable: string | null;
  /** The value as text (`cleveragents doctor --settings` shows the same); a secret shows only whether it is set and its length. */
  value: string;
  /** Where it came from: `default`, `env`, `initializationOptions` or `params`. */
  source: string;
}

/** Put a run's folder back as it was before one of its iterations, or before the run. Refused (-32002) while any run is active in that folder (or a folder inside it or around it). The folder as it was is snapshotted first, so the restore is itself undoable. */
export interface RestoreParams {
  /** The run, or a restore (restoring a restore undoes it). */
  runId: string;
  /** Go back to the state before this iteration of the run (its later changes are undone, earlier ones kept). null: undo the whole run. */
  iteration?: number | null;
  /** Only report what would change; nothing is written or recorded. */
  dryRun?: boolean;
}

export interface RestoreResult {
  /** The restore's entry in the history (`kind: restore`); pass it as `runId` to undo the restore. null for a dry run, or when nothing needed restoring. */
  restoreId: string | null;
  /** The folder restored. */
  sandboxRoot: string;
  /** The files the restore changed (or would change, with `dryRun`). */
  changedFiles: ChangedFile[];
  /** Files the checkpoint holds that were left as they are, because an ignored or too-large file stands where they would go. */
  kept: string[];
  /** Whether this was a dry run. */
  dryRun: boolean;
}

/** The batch task a run was started for (`cleveragents batch`). */
export interface RunBatch {
  /** The batch: the suite's name. */
  batchId: string;
  /** The task's id in the suite. */
  taskId: string;
  /** The matrix configuration it ran under. */
  config: string;
}

/** A run read back from the history: its summary fields plus answer, records, messages. */
export interface RunDetail {
  /** The run's id. */
  runId: string;
  /** Its prompt. */
  prompt: string;
  /** running, finished, cancelled, limit (maxIterations reached), failed, or interrupted (the daemon running it died). */
  status: RunStatus;
  /** When it started (Unix epoch seconds). */
  startedAt: number;
  /** When it ended; null while running. */
  finishedAt: number | null;
  /** LLM calls made (so far). */
  iterations: number;
  /** Tool calls recorded (so far). */
  toolCallCount: number;
  /** Its sandbox root. */
  sandboxRoot: string | null;
  /** Its automation profile (empty for a restore). */
  automationProfile: string;
  /** The run it continued, if any. */
  continuedFrom: string | null;
  /** Tokens used (so far) and their cost; `costUsd` is null for an unknown price and for runs stored before costs were. */
  usage: Usage;
  /** `run`, or `restore`: a `cleveragents/restore` of a folder, whose `prompt` says what it restored; restoring it undoes it. */
  kind: RunKind;
  /** For a restore: the run (or restore) it went back on. */
  restoredRunId: string | null;
  /** For a restore: the iteration it went back to before; null for a whole run. */
  restoredIteration: number | null;
  /** For a batch run: its batch, task and configuration; else null. */
  batch: RunBatch | null;
  /** Its LLM-call limit. */
  maxIterations: number;
  /** Its final answer, once finished. */
  content: string | null;
  /** As in `RunResult`, once finished. */
  stopReason: string | null;
  /** For a failed or interrupted run, why. */
  error: string | null;
  /** For a failed run, the exception type. */
  errorType: string | null;
  /** Each model call's tokens and cost, in order. */
  iterationUsage: IterationUsage[];
  /** The files attached to its prompt, with the text the model was shown. */
  resources: RunResource[];
  /** The images attached to its prompt (1.3). */
  images: StoredImage[];
  /** Every record stored, in the order the model asked for them. */
  toolCallHistory: ToolCallRecord[];
  /** This run's own conversation, from its prompt on. */
  messages: ConversationMessage[];
  /** Its checkpoints, oldest first: one per iteration that changed the folder (for a restore, the one that undoes it). Empty once pruned. */
  checkpoints: Checkpoint[];
  /** The files it changed; empty while it runs, when it changed nothing, or when it took no checkpoints. */
  changedFiles: ChangedFile[];
  /** Why it cannot be wholly undone, if it cannot. */
  checkpointWarning: string | null;
  /** The plan as its last `update_plan` call left it (the call's record holds it); null when it set none. */
  plan: PlanStep[] | null;
}

/** The run ended. Always the last notification of a run. */
export interface RunFinishedParams {
  /** The run's id. */
  runId: string;
  /** Per-run sequence number. */
  seq: number;
  /** Why it ended; `error` when the provider or runtime failed. */
  stopReason: FinishReason;
  /** The final (or partial) answer. */
  content: string;
  /** LLM calls made. */
  iterations: number;
  /** True when `maxIterations` ended it. */
  terminatedByLimit: boolean;
  /** Tokens used and their cost (for a failed run, those of its finished calls). */
  usage: Usage;
  /** How many tool calls the run recorded. */
  toolCalls: number;
  /** With `stopReason: error`, what went wrong. */
  error: string | null;
  /** With `stopReason: error`, the exception's type name. */
  errorType: string | null;
}

/** An image attached to a prompt (PNG, JPEG, GIF or WebP; docs/images.md). The daemon reads its type and size from the bytes; it refuses (-32602, naming the image and the limit) one over 3.75 MiB or 8000 px a side, more than 20 images or 20 MiB in all, and every image when the run's model cannot see (the offline model; an OpenAI-compatible one without `CLEVERAGENTS_OPENAI_VISION=1`), before any request. */
export interface RunImage {
  /** The image's bytes, base64-encoded. */
  data: string;
  /** What the client believes it is (`image/png`...); the bytes decide. */
  mediaType?: string | null;
  /** What the user knows it by (a file name); null: `images[N]`. */
  name?: string | null;
}

export const RunKindValues = ["run", "restore"] as const;
export type RunKind = (typeof RunKindValues)[number];

/** Start a run. The request stays open until the run ends; notifications stream meanwhile. Every field except `prompt` and `sandboxRoot` overrides the `initializationOptions` value. */
export interface RunParams {
  /** The user's request; empty only when `images` are attached (1.3). */
  prompt: string;
  /** Absolute path of an existing folder. Tools can reach nothing outside it; the model never chooses it. */
  sandboxRoot: string;
  /** The LLM provider. Accepts: offline, replay, anthropic or openai. Default: the session's `provider`. */
  provider?: string | null;
  /** The model name for the provider. Default: the session's `model`. */
  model?: string | null;
  /** Model calls a run may make before it stops. Accepts: 1 to 1000. Default: the session's `maxIterations`. */
  maxIterations?: number | null;
  /** What may run without asking. Accepts: read-only, ask, auto-edit or full-auto. Default: the session's `automationProfile`. */
  automationProfile?: AutomationProfile | null;
  /** A finished run's id: this run continues its conversation. */
  continueFrom?: string | null;
  /** The run's id, chosen by the client (1 to 64 letters, digits, `_`, `-`, `.`, `:`); must be new. Default: generated. */
  runId?: string | null;
  /** The system prompt. Default: the session's `systemPrompt`. */
  systemPrompt?: string | null;
  /** Offer only these tools (names from `cleveragents/tools`). Default: all. */
  tools?: string[] | null;
  /** The provider's base URL (OpenAI-compatible servers, proxies). Default: the session's `baseUrl`. */
  baseUrl?: string | null;
  /** The replay provider's JSON script. Default: the session's `replayScript`. */
  replayScript?: string | null;
  /** Tokens a model call may answer. Accepts: at least 1. Default: the session's `maxTokens`. */
  maxTokens?: number | null;
  /** Characters of one tool result the model is shown. Accepts: 1,000 to 10,000,000. Default: the session's `toolResultBudget`. */
  toolResultBudget?: number | null;
  /** The model's context window, for models the table does not know. Accepts: 1,024 to 100,000,000. Default: the session's `contextWindow`. */
  contextWindow?: number | null;
  /** Send prompt-cache breakpoints ([tokens.md](../docs/tokens.md)). Default: the session's `promptCaching`. */
  promptCaching?: boolean | null;
  /** Send the workspace's AGENTS.md / CLAUDE.md and the user's own to the model. Default: the session's `projectInstructions`. */
  projectInstructions?: boolean | null;
  /** Files attached to the prompt (at most 50); the model sees them first. */
  resources?: RunResource[] | null;
  /** Images attached to the prompt (at most 20; 1.3); the model must see. */
  images?: RunImage[] | null;
  /** Folders run_command may also read (lists add up). Accepts: absolute or starting with ~ (the variable: separated by `:`). Default: the session's `commandReadPaths`. */
  commandReadPaths?: string[] | null;
  /** Variables run_command also passes on (lists add up). Accepts: names or patterns such as NODE_* (the variable: separated by commas). Default: the session's `commandEnv`. */
  commandEnv?: string[] | null;
  /** `run_command`'s limits in this run, over the session's. */
  commandLimits?: CommandLimits | null;
  /** Where bubblewrap is missing, run commands unconfined under full-auto without asking. Default: the session's `allowUnconfinedCommands`. */
  allowUnconfinedCommands?: boolean | null;
  /** LSP work-done token: the daemon then reports the run with `$/progress`. */
  workDoneToken?: number | string | null;
}

/** A file attached to a prompt: the whole file, a range of its lines, or the editor's text. The daemon reads the file (through the sandbox wall) when `text` is null. The model sees every resource in the run's first message, before the prompt, as a fenced block under its path and lines; over 50,000 characters (150,000 for all of a run's) it is cut, with a marker naming what was left out. */
export interface RunResource {
  /** The file, relative to the sandbox root or absolute inside it; a path outside the sandbox is refused (-32602). */
  path: string;
  /** The text to show (a selection, an unsaved buffer); null: the daemon reads the file. */
  text?: string | null;
  /** First line (from 1). With `text`, where the text begins; without it, the first line to read. */
  startLine?: number | null;
  /** Last line, inclusive. Without `text`: null reads to the end of the file. */
  endLine?: number | null;
}

/** The result of `cleveragents/run`: the final (or partial) answer and every tool call. */
export interface RunResult {
  /** The run's id. */
  runId: string;
  /** The final answer; for a cancelled or limited run, the text so far. */
  content: string;
  /** Why the run ended. */
  stopReason: StopReason;
  /** LLM calls made. */
  iterations: number;
  /** True when `maxIterations` ended the run. */
  terminatedByLimit: boolean;
  /** Tokens used by this run, and their cost. */
  usage: Usage;
  /** Every tool call of this run, in the order the model asked for them. */
  toolCallHistory: ToolCallRecord[];
  /** The run this one continued, if any. */
  continuedFrom: string | null;
  /** The files this run changed, from its checkpoints (whoever changed them while it ran: its tools, its commands). Empty when it changed nothing, or when checkpoints were off (then `checkpointWarning` says so). */
  changedFiles: ChangedFile[];
  /** Why this run cannot be wholly undone (git missing, a snapshot failed); null when every checkpoint was taken. */
  checkpointWarning: string | null;
  /** Its checkpoints, oldest first, as `RunDetail.checkpoints` (1.3): a client offers the run's undo from the result, with no `cleveragents/getRun`. */
  checkpoints: Checkpoint[];
}

/** The run began. Always the first notification of a run (`seq` 1). */
export interface RunStartedParams {
  /** The run's id. */
  runId: string;
  /** 1, 2, 3... per run, across all its notifications. */
  seq: number;
  /** The prompt. */
  prompt: string;
  /** The sandbox root, resolved. */
  sandboxRoot: string;
  /** The profile in force. */
  automationProfile: AutomationProfile;
  /** The LLM-call limit in force. */
  maxIterations: number;
  /** The provider in use. */
  provider: string;
  /** The model asked for, if one was named. */
  model: string | null;
  /** The run this one continues, if any. */
  continuedFrom: string | null;
  /** The project instructions files in the run's system prompt (the user's own, then the root's AGENTS.md); empty when there are none or they are turned off. A subfolder's file reaches the model later, with the first tool result there. */
  instructions: InstructionFile[];
  /** The images attached to the prompt, with their bytes, so every client shows them (1.3); empty when there are none. */
  images: StoredImage[];
}

export const RunStatusValues = ["running", "finished", "cancelled", "limit", "failed", "interrupted"] as const;
export type RunStatus = (typeof RunStatusValues)[number];

/** One run as the history lists it. Times are Unix epoch seconds. */
export interface RunSummary {
  /** The run's id. */
  runId: string;
  /** Its prompt. */
  prompt: string;
  /** running, finished, cancelled, limit (maxIterations reached), failed, or interrupted (the daemon running it died). */
  status: RunStatus;
  /** When it started (Unix epoch seconds). */
  startedAt: number;
  /** When it ended; null while running. */
  finishedAt: number | null;
  /** LLM calls made (so far). */
  iterations: number;
  /** Tool calls recorded (so far). */
  toolCallCount: number;
  /** Its sandbox root. */
  sandboxRoot: string | null;
  /** Its automation profile (empty for a restore). */
  automationProfile: string;
  /** The run it continued, if any. */
  continuedFrom: string | null;
  /** Tokens used (so far) and their cost; `costUsd` is null for an unknown price and for runs stored before costs were. */
  usage: Usage;
  /** `run`, or `restore`: a `cleveragents/restore` of a folder, whose `prompt` says what it restored; restoring it undoes it. */
  kind: RunKind;
  /** For a restore: the run (or restore) it went back on. */
  restoredRunId: string | null;
  /** For a restore: the iteration it went back to before; null for a whole run. */
  restoredIteration: number | null;
  /** For a batch run: its batch, task and configuration; else null. */
  batch: RunBatch | null;
}

/** List past and running runs from the history, newest first. */
export interface RunsParams {
  /** At most this many runs (1 to 1000). */
  limit?: number;
  /** Skip this many of the newest runs. */
  offset?: number;
  /** Only the runs of this batch (`cleveragents batch`; the suite's name). */
  batchId?: string | null;
}

export interface RunsResult {
  /** Newest first. */
  runs: RunSummary[];
}

/** `capabilities.experimental.cleveragents` of the `initialize` result. */
export interface ServerCapability {
  /** This protocol's version (1.3). */
  protocolVersion: string;
  /** The cleveragents package version. */
  serverVersion: string;
  /** Provider names this daemon knows. */
  providers: string[];
  /** Valid `automationProfile` values. */
  automationProfiles: string[];
  /** Whether this daemon will ask this client to approve tool calls. */
  approvals: boolean;
  /** Whether this daemon will ask this client to trust workspaces. */
  trust: boolean;
  /** The names of the client's tools this daemon offers to runs (1.3). */
  clientTools: string[];
}

/** `params` may be omitted. */
export interface SettingsParams {
  /** Also resolve a run with these params (checked as `cleveragents/run` checks them, not started): its settings are then the ones that run would use. */
  run?: RunParams | null;
}

export interface SettingsResult {
  /** Every row, in the table's order. */
  settings: ResolvedSetting[];
}

/** The workspace checkpoint before an iteration first changed the folder was saved (a step of its own: its time is in no tool call's `durationMs`). */
export interface SnapshotParams {
  /** The run's id. */
  runId: string;
  /** Per-run sequence number. */
  seq: number;
  /** The iteration the checkpoint was taken before. */
  iteration: number;
  /** How long saving it took. */
  durationMs: number;
  /** Files it holds; null when not known. */
  files: number | null;
  /** Why it failed (that iteration's changes are then denied); null on success. */
  error: string | null;
}

/** A checkpoint is still being saved: sent about once a second from its first second on. */
export interface SnapshotProgressParams {
  /** The run's id. */
  runId: string;
  /** Per-run sequence number. */
  seq: number;
  /** The iteration the checkpoint is taken before. */
  iteration: number;
  /** Time spent on it so far. */
  elapsedMs: number;
}

export const StopReasonValues = ["final_answer", "max_iterations", "cancelled", "context_exhausted"] as const;
export type StopReason = (typeof StopReasonValues)[number];

/** An image of a stored run's prompt: the history keeps it by reference, its bytes in a size-capped image store next to the history (the least recently used go first). */
export interface StoredImage {
  /** What the user knew it by. */
  name: string;
  /** `image/png`, `image/jpeg`, `image/gif` or `image/webp`. */
  mediaType: string;
  /** Pixels. */
  width: number;
  /** Pixels. */
  height: number;
  /** The image's size. */
  sizeBytes: number;
  /** The bytes, base64-encoded; null once evicted from the image store. */
  data: string | null;
}

/** A piece of assistant text, as it streams. */
export interface TextDeltaParams {
  /** The run's id. */
  runId: string;
  /** Per-run sequence number. */
  seq: number;
  /** The LLM call this text belongs to. */
  iteration: number;
  /** The new text; concatenate the deltas of an iteration. */
  text: string;
}

/** A tool call finished (or failed, or was denied or cancelled): its record. */
export interface ToolCallParams {
  /** The run's id. */
  runId: string;
  /** Per-run sequence number. */
  seq: number;
  /** The call as it happened. */
  record: ToolCallRecord;
}

/** One tool call as it happened. Failed calls have `success: false` and an `errorKind`. */
export interface ToolCallRecord {
  /** The call's id, as the model (or runtime) gave it. */
  callId: string;
  /** The tool the model asked for. */
  toolName: string;
  /** Arguments the tool ran with (the model's, plus the sandbox root where the tool takes it). A non-object the model sent is kept under `_raw`. */
  inputs: { [key: string]: unknown };
  /** What the tool returned, as an object; `{}` when it failed. */
  output: { [key: string]: unknown };
  /** Wall time of the call, in milliseconds. */
  durationMs: number;
  /** Whether the tool ran and returned normally. */
  success: boolean;
  /** Why it failed, in words; null on success. */
  error: string | null;
  /** Why it failed, machine-readable; null on success. */
  errorKind: ErrorKind | null;
  /** The loop iteration (LLM call) that asked for it. */
  iteration: number;
}

/** A tool call is starting (before validation and approval). */
export interface ToolCallStartedParams {
  /** The run's id. */
  runId: string;
  /** Per-run sequence number. */
  seq: number;
  /** The iteration that asked for the call. */
  iteration: number;
  /** Matches the `callId` of the later record. */
  callId: string;
  /** The tool the model asked for. */
  toolName: string;
  /** The arguments as the model sent them (any JSON). */
  inputs: unknown;
}

/** A tool the daemon offers to the model. */
export interface ToolInfo {
  /** The tool's name. */
  name: string;
  /** What the model is told about it. */
  description: string;
  /** JSON Schema of its arguments. */
  inputSchema: { [key: string]: unknown };
  /** It changes the workspace (profiles gate it). */
  mutating: boolean;
  /** It runs programs (auto-edit still asks). */
  executesCode: boolean;
  /** Where it comes from: builtin, a module, a plugin. */
  source: string;
}

/** A tool's result as fed back to the model, inside a tool message. */
export interface ToolResultContent {
  /** The call it answers. */
  callId: string;
  /** The tool. */
  toolName: string;
  /** The output, or the error. */
  content: { [key: string]: unknown };
  /** Whether the call failed. */
  isError: boolean;
}

/** `params` may be omitted. */
export interface ToolsParams {
  /** Also list the MCP tools of this folder's `.mcp.json` (starts its servers, which its runs then reuse). */
  sandboxRoot?: string | null;
}

export interface ToolsResult {
  /** In the order they are offered. */
  tools: ToolInfo[];
}

/** Sent before a workspace's `.mcp.json` would start its servers for the first time, and whenever the file changes. Only to clients that declared `capabilities.experimental.cleveragents.trust`. The answer is remembered for this folder and this file's `configHash`. */
export interface TrustWorkspaceParams {
  /** The folder (resolved). */
  sandboxRoot: string;
  /** The `.mcp.json` file. */
  configPath: string;
  /** SHA-256 (hex) over the file's exact bytes and what this question shows beyond them (each resolved `program`, the content of one inside the workspace, the expanded values of variables that change what runs): the answer is kept under it. */
  configHash: string;
  /** Every server it would start. */
  servers: TrustedServer[];
}

export interface TrustWorkspaceResult {
  /** Start the servers; false: the run goes on without their tools. */
  trusted: boolean;
}

/** A program the workspace's `.mcp.json` would start: as written in the file, and what will actually run. Show `program` (flagged when `programInWorkspace`) and every `env` entry. */
export interface TrustedServer {
  /** The server's name in `mcpServers`. */
  name: string;
  /** The command as written (`${VAR}` references unexpanded). */
  command: string;
  /** Its arguments as written. */
  args: string[];
  /** Names of the variables it sets. */
  envNames: string[];
  /** The absolute path that will be started: `command` resolved with the server's own `PATH` (else the daemon's) and working folder (the sandbox root), exactly as the start does (the start runs this path). Null when nothing was found (the start fails). */
  program: string | null;
  /** `program` (or the file its links lead to) lies inside the workspace: the workspace chose the program itself. Flag it. */
  programInWorkspace: boolean;
  /** Every variable it sets, in the file's order, with its value. */
  env: TrustedVariable[];
}

/** A variable a server would be started with, as the question shows it. */
export interface TrustedVariable {
  /** Its name. */
  name: string;
  /** Its value as written (`${VAR}` references unexpanded); null when `masked`. */
  value: string | null;
  /** The length of the value as written. */
  length: number;
  /** The value looks like a secret and is not sent: show that the variable is set, and its length. */
  masked: boolean;
  /** It changes which program runs or what it loads (`PATH`, `LD_*`, `DYLD_*`, `NODE_OPTIONS`, `PYTHON*`, `BASH_ENV`, `GIT_*`, ...): never masked; flag it. */
  changesWhatRuns: boolean;
  /** For a variable that `changesWhatRuns`, its value after `${VAR}` expansion when that differs from `value`; else null. */
  expanded: string | null;
}

/** Tokens the provider reported (zero for providers that report none) and their estimated cost: of one model call, or summed over a run. */
export interface Usage {
  /** All the input the model read: uncached input plus cache writes plus cache reads. */
  inputTokens: number;
  /** Tokens the model wrote. */
  outputTokens: number;
  /** Of `inputTokens`, read from the provider's prompt cache (billed less). */
  cacheReadTokens: number;
  /** Of `inputTokens`, written to the prompt cache (Anthropic bills them more). */
  cacheWriteTokens: number;
  /** Estimated cost in US dollars at the model's price (the built-in table or the `prices` setting); null when the model's price is unknown: never a guess. */
  costUsd: number | null;
}

/** A model call returned: its tokens and cost, and the run's so far. Sent after each model call, before that call's tools start. */
export interface UsageParams {
  /** The run's id. */
  runId: string;
  /** Per-run sequence number. */
  seq: number;
  /** The model call (iteration) that returned. */
  iteration: number;
  /** That call's tokens and cost. */
  usage: Usage;
  /** The run's tokens and cost so far. */
  total: Usage;
}

/** Requests the client sends. */
export interface ClientRequests {
  "cleveragents/run": { params: RunParams; result: RunResult };
  "cleveragents/cancel": { params: CancelParams; result: CancelResult };
  "cleveragents/tools": { params: ToolsParams; result: ToolsResult };
  "cleveragents/runs": { params: RunsParams; result: RunsResult };
  "cleveragents/getRun": { params: GetRunParams; result: RunDetail };
  "cleveragents/restore": { params: RestoreParams; result: RestoreResult };
  "cleveragents/listCommands": { params: ListCommandsParams; result: ListCommandsResult };
  "cleveragents/settings": { params: SettingsParams; result: SettingsResult };
}

/** Requests the daemon sends to the client. */
export interface ServerRequests {
  "cleveragents/approveToolCall": { params: ApproveToolCallParams; result: ApproveToolCallResult };
  "cleveragents/trustWorkspace": { params: TrustWorkspaceParams; result: TrustWorkspaceResult };
  "cleveragents/callClientTool": { params: CallClientToolParams; result: CallClientToolResult };
}

/** Notifications the daemon sends, by method. */
export interface ServerNotifications {
  "cleveragents/runStarted": RunStartedParams;
  "cleveragents/plan": PlanParams;
  "cleveragents/iterationStarted": IterationStartedParams;
  "cleveragents/textDelta": TextDeltaParams;
  "cleveragents/toolCallStarted": ToolCallStartedParams;
  "cleveragents/snapshotProgress": SnapshotProgressParams;
  "cleveragents/snapshot": SnapshotParams;
  "cleveragents/toolCall": ToolCallParams;
  "cleveragents/usage": UsageParams;
  "cleveragents/runFinished": RunFinishedParams;
}

/** JSON-RPC error codes the daemon answers with. */
export const ErrorCodes = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  ServerNotInitialized: -32002,
  RequestCancelled: -32800,
  RunFailed: -32010,
  RunNotFound: -32011,
  RunIdInUse: -32012,
  RunStillRunning: -32013,
  ProviderUnavailable: -32014,
  ToolsUnavailable: -32015,
  RunActive: -32002,
  CheckpointsUnavailable: -32016,
  NoCheckpoint: -32017,
  RestoreFailed: -32018,
  Unauthorized: -32030,
} as const;
