// Which Python runs the daemon: the setting, else the Python extension's selected
// interpreter (when that extension is installed), else `python3`.

import * as vscode from 'vscode';

export const PYTHON_EXTENSION_ID = 'ms-python.python';

export interface InterpreterChoice {
  python: string;
  /** Where it came from, for the output channel and messages. */
  source: 'setting' | 'python-extension' | 'default';
}

/** The part of the Python extension's API (`environments`) used here. */
interface PythonEnvironmentsApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(
      environment: { id: string; path: string } | string,
    ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

function isEnvironmentsApi(value: unknown): value is PythonEnvironmentsApi {
  const environments = (value as { environments?: Record<string, unknown> } | undefined)?.environments;
  return (
    typeof environments?.getActiveEnvironmentPath === 'function' &&
    typeof environments.resolveEnvironment === 'function'
  );
}

async function pythonExtensionApi(): Promise<PythonEnvironmentsApi | null> {
  const extension = vscode.extensions.getExtension(PYTHON_EXTENSION_ID);
  if (extension === undefined) {
    return null;
  }
  try {
    const api: unknown = extension.isActive ? extension.exports : await extension.activate();
    return isEnvironmentsApi(api) ? api : null;
  } catch {
    return null;
  }
}

export async function chooseInterpreter(
  configured: string,
  resource: vscode.Uri | undefined,
  log: vscode.LogOutputChannel,
): Promise<InterpreterChoice> {
  if (configured) {
    return { python: configured, source: 'setting' };
  }
  const api = await pythonExtensionApi();
  if (api !== null) {
    try {
      const active = api.environments.getActiveEnvironmentPath(resource);
      const resolved = await api.environments.resolveEnvironment(active);
      const executable = resolved?.executable.uri?.fsPath ?? active.path;
      if (executable) {
        return { python: executable, source: 'python-extension' };
      }
    } catch (error) {
      log.warn(`the Python extension did not give an interpreter: ${String(error)}`);
    }
  }
  return { python: 'python3', source: 'default' };
}

/** Calls `listener` when the Python extension's selected interpreter changes. */
export async function watchSelectedInterpreter(listener: () => void): Promise<vscode.Disposable | null> {
  const api = await pythonExtensionApi();
  if (api === null) {
    return null;
  }
  return api.environments.onDidChangeActiveEnvironmentPath(() => listener());
}
