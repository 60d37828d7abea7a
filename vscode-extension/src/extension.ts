// Entry point: wires the daemon client, the run store, the runs panel, the status bar and
// the commands together.

import * as vscode from 'vscode';

import { ApiKeyStore } from './daemon/apiKeys';
import { DaemonClient } from './daemon/daemonClient';
import { API_KEY_VARIABLES, type KeyedProvider } from './daemon/launch';
import { PrivateEnvironment } from './daemon/privateEnvironment';
import { watchSelectedInterpreter } from './daemon/pythonInterpreter';
import { CHANGE_SCHEME, ChangeReview } from './host/changeReview';
import { callClientTool } from './host/clientTools';
import { VsCodeEditorView } from './host/editorView';
import { RunController } from './host/runController';
import { RunStore } from './host/runStore';
import { RUN_VIEW_ID, RunViewProvider } from './host/runViewProvider';
import { readSettings, RESTART_SETTINGS, type Settings } from './host/settings';
import { RunStatusBar } from './host/statusBar';
import { DONT_TRUST, TRUST, trustQuestion } from './host/trustPrompt';

let daemonForDeactivate: DaemonClient | null = null;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('cleveragents', { log: true });
  const keys = new ApiKeyStore(context.secrets);
  const store = new RunStore();
  const settings = (): Settings => readSettings(vscode.workspace.getConfiguration('cleveragents'));

  let controller: RunController | null = null;
  const editorView = new VsCodeEditorView((runId) => store.run(runId)?.header.sandboxRoot ?? null);
  const daemon = new DaemonClient({
    log,
    keys,
    settings,
    resource: () => vscode.workspace.workspaceFolders?.[0]?.uri,
    privateEnvironment: new PrivateEnvironment(context, log),
    events: {
      notification: (notification) => controller?.onNotification(notification),
      approval: async (params, token) => {
        if (controller === null) {
          return { decision: 'deny' };
        }
        return controller.approve(params, token);
      },
      trust: async (params, token) => {
        const question = trustQuestion(params);
        log.info(`trust asked for ${params.configPath} (${params.servers.map((server) => server.name).join(', ')})`);
        const answer = await vscode.window.showWarningMessage(question.message, { modal: true, detail: question.detail }, TRUST, DONT_TRUST);
        const trusted = answer === TRUST && !token.isCancellationRequested;
        log.info(`${params.configPath}: ${trusted ? 'trusted' : 'not trusted'}`);
        return { trusted };
      },
      clientTool: (params, token) => callClientTool(params, editorView, token),
      status: (status) => store.setDaemon(status),
    },
  });
  daemonForDeactivate = daemon;

  let provider: RunViewProvider | null = null;
  const review = new ChangeReview(log);
  const runController = new RunController({
    review,
    store,
    daemon,
    log,
    // The panel's picks (provider, model, profile) over the settings.
    settings: () => provider?.runSettings() ?? settings(),
    revealPanel: async (preserveFocus) => provider?.reveal(preserveFocus),
    notice: (notice) => provider?.showNotice(notice),
  });
  controller = runController;
  const viewProvider = new RunViewProvider(context.extensionUri, store, runController, log, context.workspaceState, settings);
  provider = viewProvider;

  const restartDaemon = async (reason: string): Promise<void> => {
    log.info(`restarting the daemon: ${reason}`);
    try {
      await daemon.restart();
      void runController.refreshHistory();
    } catch (error) {
      // The daemon client has put the reason (and its fix) in the status and the log.
      void vscode.window.showErrorMessage((error as Error).message, 'Show Output').then((choice) => {
        if (choice === 'Show Output') log.show();
      });
    }
  };

  /** Restart now if nothing runs; otherwise ask, since a restart stops the run. */
  const restartWhenIdle = async (reason: string): Promise<void> => {
    if (!daemon.running) {
      return; // the next start uses the new values anyway
    }
    const going = store.activeRuns.length;
    if (going === 0) {
      await restartDaemon(reason);
      return;
    }
    const choice = await vscode.window.showInformationMessage(
      `${reason} The daemon must restart to apply it, which stops ${going === 1 ? 'the current run' : `the ${going} runs going`}.`,
      'Restart Now',
      'Later',
    );
    if (choice === 'Restart Now') {
      await restartDaemon(reason);
    }
  };

  context.subscriptions.push(
    log,
    vscode.window.registerWebviewViewProvider(RUN_VIEW_ID, viewProvider),
    viewProvider,
    new RunStatusBar(store),
    daemon,
    vscode.commands.registerCommand('cleveragents.runToolLoop', async (promptArgument?: unknown) => {
      const prompt =
        typeof promptArgument === 'string'
          ? promptArgument
          : await vscode.window.showInputBox({
              title: 'cleveragents: Run Tool Loop',
              prompt: 'What should the agent do in this workspace?',
              placeHolder: 'e.g. Find the TODO comments and list them',
              ignoreFocusOut: true,
              validateInput: (value) => (value.trim() ? null : 'Type a prompt'),
            });
      if (prompt === undefined) {
        return false;
      }
      return runController.startRun(prompt);
    }),
    review,
    vscode.workspace.registerTextDocumentContentProvider(CHANGE_SCHEME, review),
    vscode.commands.registerCommand('cleveragents.allowChange', (uri?: unknown) => runController.answerFromEditor(uri, 'allow')),
    vscode.commands.registerCommand('cleveragents.denyChange', (uri?: unknown) => runController.answerFromEditor(uri, 'deny')),
    vscode.commands.registerCommand('cleveragents.stop', () => runController.stop()),
    vscode.commands.registerCommand('cleveragents.showPanel', () => viewProvider.reveal(false, true)),
    vscode.commands.registerCommand('cleveragents.restartDaemon', () => restartDaemon('requested')),
    vscode.commands.registerCommand('cleveragents.setApiKey', async () => {
      const changed = await setApiKey(keys, viewProvider.runSettings().provider);
      if (changed !== null) {
        await restartWhenIdle(`The ${changed} API key changed.`);
      }
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration('cleveragents')) viewProvider.refreshOptions();
      const needsRestart = RESTART_SETTINGS.some((name) => event.affectsConfiguration(`cleveragents.${name}`));
      if (needsRestart) {
        void restartWhenIdle('A cleveragents setting changed.');
      }
    }),
    keys.onDidChange(() => log.info('stored API keys changed')),
  );

  void watchSelectedInterpreter(() => {
    if (!settings().pythonPath) {
      void restartWhenIdle('The selected Python interpreter changed.');
    }
  }).then((subscription) => {
    if (subscription !== null) {
      context.subscriptions.push(subscription);
    }
  });
}

export async function deactivate(): Promise<void> {
  await daemonForDeactivate?.stop();
  daemonForDeactivate = null;
}

/** Asks for a provider and a key; returns the provider whose key changed, or null. */
async function setApiKey(keys: ApiKeyStore, current: string): Promise<KeyedProvider | null> {
  // The provider in use comes first, so Enter picks it.
  const providers = (Object.keys(API_KEY_VARIABLES) as KeyedProvider[]).sort(
    (a, b) => Number(b === current) - Number(a === current),
  );
  const picked = await vscode.window.showQuickPick(
    providers.map((name) => ({
      label: name,
      description: `given to the daemon as ${API_KEY_VARIABLES[name]}`,
      detail: name === current ? 'the provider in use (cleveragents.provider)' : undefined,
    })),
    { title: 'cleveragents: Set API Key', placeHolder: 'Which provider is the key for?' },
  );
  const provider = picked?.label as KeyedProvider | undefined;
  if (provider === undefined) {
    return null;
  }
  const stored = (await keys.get(provider)) !== undefined;
  const key = await vscode.window.showInputBox({
    title: `cleveragents: ${provider} API key`,
    prompt: stored
      ? `A key is stored for ${provider}. Enter a new one, or leave empty to remove it.`
      : `Enter your ${provider} API key. It is kept in VS Code's secret storage and given to the daemon as ${API_KEY_VARIABLES[provider]}.`,
    password: true,
    ignoreFocusOut: true,
  });
  if (key === undefined) {
    return null;
  }
  if (key.trim() === '') {
    if (!stored) {
      return null;
    }
    await keys.delete(provider);
    void vscode.window.showInformationMessage(`The ${provider} API key was removed.`);
    return provider;
  }
  await keys.set(provider, key.trim());
  void vscode.window.showInformationMessage(`The ${provider} API key is stored.`);
  return provider;
}
