// The daemon connection: `cleveragents serve --stdio` under vscode-languageclient.
//
// Before starting, the interpreter is probed so a missing Python or package is one clear
// message with its fix. The language client restarts the daemon when it dies (up to
// MAX_RESTARTS within RESTART_WINDOW_MS), then stops and offers a restart.

import { spawn, type ChildProcess } from 'node:child_process';
import * as os from 'node:os';

import * as vscode from 'vscode';
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  State,
  type CloseHandlerResult,
  type ErrorHandlerResult,
  type LanguageClientOptions,
} from 'vscode-languageclient/node';

import {
  PROTOCOL_VERSION,
  type ApproveToolCallParams,
  type ApproveToolCallResult,
  type CallClientToolParams,
  type CallClientToolResult,
  type ClientRequests,
  type ServerCapability,
} from '../protocol';
import type { TrustWorkspaceParams, TrustWorkspaceResult } from '../shared/wireAdditions';
import type { DaemonStatus } from '../shared/messages';
import { RUN_NOTIFICATIONS } from '../shared/runNotifications';
import type { RunNotification } from '../shared/runState';
import { CLIENT_TOOLS } from '../host/clientTools';
import { initializationOptions, type Settings } from '../host/settings';
import type { ApiKeyStore } from './apiKeys';
import {
  daemonArguments,
  daemonEnvironment,
  describeLaunch,
  probeInterpreter,
  type LaunchOptions,
  type ProbeResult,
} from './launch';
import type { PrivateEnvironment } from './privateEnvironment';
import { chooseInterpreter } from './pythonInterpreter';

const NOTIFICATIONS = RUN_NOTIFICATIONS;

const MAX_RESTARTS = 4;
const RESTART_WINDOW_MS = 3 * 60_000;
const STOP_TIMEOUT_MS = 8_000;

export interface DaemonEvents {
  notification(notification: RunNotification): void;
  approval(params: ApproveToolCallParams, token: vscode.CancellationToken): Promise<ApproveToolCallResult>;
  /** A folder's MCP config wants to start programs: may it? */
  trust(params: TrustWorkspaceParams, token: vscode.CancellationToken): Promise<TrustWorkspaceResult>;
  /** A run calls one of the tools this editor serves (host/clientTools.ts). */
  clientTool(params: CallClientToolParams, token: vscode.CancellationToken): Promise<CallClientToolResult>;
  status(status: DaemonStatus): void;
}

export interface DaemonDependencies {
  log: vscode.LogOutputChannel;
  keys: ApiKeyStore;
  settings: () => Settings;
  /** The folder whose Python interpreter the Python extension should report. */
  resource: () => vscode.Uri | undefined;
  events: DaemonEvents;
  /** Sets up (and remembers) a private environment from the bundled wheel. */
  privateEnvironment?: PrivateEnvironment;
}

/** Starting the daemon failed for a reason the user can fix; `message` says how. */
export class DaemonUnavailableError extends Error {
  constructor(
    message: string,
    readonly kind: string,
  ) {
    super(message);
  }
}

export class DaemonClient implements vscode.Disposable {
  private client: LanguageClient | null = null;
  private starting: Promise<LanguageClient> | null = null;
  private restarts: number[] = [];
  private launch: LaunchOptions | null = null;
  private disposed = false;

  constructor(private readonly deps: DaemonDependencies) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** The running client, starting the daemon first if needed. */
  async ensureStarted(): Promise<LanguageClient> {
    const current = this.client;
    if (current !== null && current.state === State.Running) {
      return current;
    }
    if (current !== null && current.state === State.Starting && this.starting === null) {
      // The language client is restarting a daemon that died: wait for it.
      try {
        await current.start();
        return current;
      } catch {
        // fall through to a fresh start
      }
    }
    if (this.starting === null) {
      this.starting = this.start().finally(() => {
        this.starting = null;
      });
    }
    return this.starting;
  }

  async request<M extends keyof ClientRequests>(
    method: M,
    params: ClientRequests[M]['params'],
    token?: vscode.CancellationToken,
  ): Promise<ClientRequests[M]['result']> {
    const client = await this.ensureStarted();
    if (token !== undefined) {
      return client.sendRequest<ClientRequests[M]['result']>(method, params, token);
    }
    return client.sendRequest<ClientRequests[M]['result']>(method, params);
  }

  async restart(): Promise<void> {
    await this.stop();
    this.restarts = [];
    await this.ensureStarted();
  }

  async stop(): Promise<void> {
    if (this.starting !== null) {
      await this.starting.catch(() => undefined);
    }
    const client = this.client;
    this.client = null;
    if (client !== null) {
      try {
        if (client.needsStop()) {
          await client.stop(STOP_TIMEOUT_MS);
        }
      } catch (error) {
        this.deps.log.warn(`stopping the daemon: ${String(error)}`);
      } finally {
        await client.dispose().catch(() => undefined);
      }
    }
    this.status({ state: 'stopped', message: 'The daemon is stopped.' });
  }

  dispose(): void {
    this.disposed = true;
    void this.stop();
  }

  // -- starting ------------------------------------------------------------------------------

  private async start(): Promise<LanguageClient> {
    if (this.disposed) {
      throw new DaemonUnavailableError('The extension is shutting down.', 'disposed');
    }
    if (this.client !== null) {
      const old = this.client;
      this.client = null;
      await old.dispose().catch(() => undefined);
    }
    const settings = this.deps.settings();
    const { log } = this.deps;
    this.status({ state: 'starting', message: 'Starting the daemon…' });
    const choice = await chooseInterpreter(settings.pythonPath, this.deps.resource(), log);
    log.info(`Python interpreter: ${choice.python} (from ${describeSource(choice.source)})`);
    const probe = await this.usableInterpreter(choice.python);
    if (!probe.ok) {
      log.error(probe.message);
      this.status({ state: 'failed', message: probe.message });
      throw new DaemonUnavailableError(probe.message, probe.kind);
    }
    log.info(
      `cleveragents ${probe.packageVersion} on Python ${probe.pythonVersion} (${probe.python})`,
    );
    this.launch = { python: probe.python, module: probe.module, historyPath: settings.historyPath };
    const client = new LanguageClient(
      'cleveragents',
      'cleveragents daemon',
      () => this.spawnDaemon(),
      this.clientOptions(settings),
    );
    this.register(client);
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.client = null;
      await client.dispose().catch(() => undefined);
      const message = `The cleveragents daemon did not start: ${errorText(error)}. See the cleveragents output for details.`;
      log.error(message);
      this.status({ state: 'failed', message });
      throw new DaemonUnavailableError(message, 'start-failed');
    }
    this.checkServer(client, probe.packageVersion, probe.python);
    return client;
  }

  /**
   * The chosen interpreter when it has this extension's cleveragents; else the private
   * environment set up before; else the offer to set one up (when the .vsix carries a wheel).
   */
  private async usableInterpreter(python: string): Promise<ProbeResult> {
    const { log } = this.deps;
    const probe = await probeInterpreter(python);
    const privateEnv = this.deps.privateEnvironment;
    const wheel = privateEnv?.wheel ?? null;
    if (privateEnv === undefined || wheel === null) return probe;
    const mismatch = probe.ok && probe.packageVersion !== wheel.version;
    if (probe.ok && !mismatch) return probe;
    if (!probe.ok && probe.kind !== 'package-missing' && probe.kind !== 'package-broken') return probe;
    const privatePython = privateEnv.python;
    if (privatePython !== null && privatePython !== python) {
      const privateProbe = await probeInterpreter(privatePython);
      if (privateProbe.ok) {
        log.info(`using the private environment ${privatePython} (${python}: ${probe.ok ? `cleveragents ${probe.packageVersion}` : probe.message})`);
        return privateProbe;
      }
    }
    const problem = probe.ok
      ? `${python} has cleveragents ${probe.packageVersion}; this extension comes with ${wheel.version}.`
      : `cleveragents is not installed for ${python}.`;
    const installed = await privateEnv.offer(python, problem);
    if (installed === null) return probe;
    return probeInterpreter(installed);
  }

  private async spawnDaemon(): Promise<ChildProcess> {
    const launch = this.launch;
    if (launch === null) {
      throw new Error('no interpreter chosen');
    }
    const keys = await this.deps.keys.all();
    this.deps.log.info(describeLaunch(launch, keys));
    const folder = this.deps.resource();
    const child = spawn(launch.python, daemonArguments(launch), {
      cwd: folder?.scheme === 'file' ? folder.fsPath : os.homedir(),
      env: daemonEnvironment(process.env, keys),
      stdio: 'pipe',
      windowsHide: true,
    });
    child.on('exit', (code, signal) => {
      this.deps.log.info(`the daemon exited (${signal ?? `code ${String(code)}`})`);
    });
    child.on('error', (error) => {
      this.deps.log.error(`the daemon could not run: ${error.message}`);
    });
    return child;
  }

  private clientOptions(settings: Settings): LanguageClientOptions {
    return {
      outputChannel: this.deps.log,
      initializationOptions: initializationOptions(settings),
      initializationFailedHandler: (error) => {
        this.deps.log.error(`initialize failed: ${errorText(error)}`);
        return false;
      },
      errorHandler: {
        error: (error, _message, count): ErrorHandlerResult => {
          this.deps.log.error(`daemon connection error: ${error.message}`);
          return (count ?? 0) <= 3
            ? { action: ErrorAction.Continue, handled: true }
            : { action: ErrorAction.Shutdown, handled: true };
        },
        closed: (): CloseHandlerResult => this.onClosed(),
      },
    };
  }

  private onClosed(): CloseHandlerResult {
    const now = Date.now();
    this.restarts = this.restarts.filter((time) => now - time < RESTART_WINDOW_MS);
    if (this.disposed) {
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    if (this.restarts.length < MAX_RESTARTS) {
      this.restarts.push(now);
      this.deps.log.warn('the daemon stopped unexpectedly; restarting it');
      this.status({ state: 'starting', message: 'The daemon stopped unexpectedly; restarting it…' });
      return { action: CloseAction.Restart, handled: true };
    }
    const message =
      `The cleveragents daemon stopped ${MAX_RESTARTS + 1} times in 3 minutes and was not ` +
      'restarted. See the cleveragents output, then run "cleveragents: Restart the Daemon".';
    this.status({ state: 'failed', message });
    void vscode.window.showErrorMessage(message, 'Restart', 'Show Output').then((choice) => {
      if (choice === 'Restart') {
        void vscode.commands.executeCommand('cleveragents.restartDaemon');
      } else if (choice === 'Show Output') {
        this.deps.log.show();
      }
    });
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  private register(client: LanguageClient): void {
    const { events } = this.deps;
    for (const method of NOTIFICATIONS) {
      client.onNotification(method, (params: RunNotification['params']) => {
        events.notification({ method, params } as RunNotification);
      });
    }
    client.onRequest(
      'cleveragents/approveToolCall',
      (params: ApproveToolCallParams, token: vscode.CancellationToken) => events.approval(params, token),
    );
    client.onRequest(
      'cleveragents/trustWorkspace',
      (params: TrustWorkspaceParams, token: vscode.CancellationToken) => events.trust(params, token),
    );
    client.onRequest(
      'cleveragents/callClientTool',
      (params: CallClientToolParams, token: vscode.CancellationToken) => events.clientTool(params, token),
    );
    // `initialize` declares what this client answers (approvals, trust questions, its tools).
    client.registerFeature({
      fillClientCapabilities: (capabilities) => {
        const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
        capabilities.experimental = {
          ...experimental,
          cleveragents: { approvals: true, trust: true, tools: CLIENT_TOOLS },
        };
      },
      initialize: () => undefined,
      getState: () => ({ kind: 'static' }),
      clear: () => undefined,
    });
    client.onDidChangeState((change) => {
      if (client !== this.client) {
        return;
      }
      if (change.newState === State.Running) {
        this.status({ state: 'ready', message: this.readyMessage(client) });
      } else if (change.newState === State.Starting) {
        this.status({ state: 'starting', message: 'Starting the daemon…' });
      }
    });
  }

  private checkServer(client: LanguageClient, packageVersion: string, python: string): void {
    const capability = serverCapability(client);
    if (capability === null) {
      this.deps.log.warn('the daemon did not advertise capabilities.experimental.cleveragents');
    } else if (major(capability.protocolVersion) !== major(PROTOCOL_VERSION)) {
      const message =
        `The cleveragents daemon speaks protocol ${capability.protocolVersion}; this extension ` +
        `speaks ${PROTOCOL_VERSION}. Update cleveragents for ${python} or the extension.`;
      this.deps.log.error(message);
      void vscode.window.showWarningMessage(message);
    }
    this.deps.log.info(`daemon ready (package ${packageVersion})`);
    this.status({ state: 'ready', message: this.readyMessage(client) });
  }

  private readyMessage(client: LanguageClient): string {
    const capability = serverCapability(client);
    const version = capability?.serverVersion ?? 'unknown version';
    return `Daemon ready: cleveragents ${version}, Python ${this.launch?.python ?? '?'}`;
  }

  private status(status: DaemonStatus): void {
    this.deps.events.status(status);
  }
}

function serverCapability(client: LanguageClient): ServerCapability | null {
  const experimental = client.initializeResult?.capabilities.experimental as
    | { cleveragents?: ServerCapability }
    | undefined;
  return experimental?.cleveragents ?? null;
}

function major(version: string): string {
  return version.split('.')[0] ?? version;
}

function describeSource(source: string): string {
  switch (source) {
    case 'setting':
      return 'the cleveragents.pythonPath setting';
    case 'python-extension':
      return "the Python extension's selected interpreter";
    default:
      return 'the default, python3 on PATH';
  }
}

export function errorText(error: unknown): string {
  if (error instanceof Error) {
    return error.message;
  }
  if (typeof error === 'object' && error !== null && 'message' in error) {
    return String((error as { message: unknown }).message);
  }
  return String(error);
}
