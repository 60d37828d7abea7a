// Install and go: the .vsix carries the daemon as a wheel (dist-wheel/). When the chosen
// interpreter lacks cleveragents, or has another version, the extension offers to make a
// private virtual environment in its global storage (`python -m venv`, then pip installs the
// bundled wheel with its dependencies from PyPI) and uses it from then on.

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import * as vscode from 'vscode';

const PRIVATE_PYTHON_KEY = 'cleveragents.privatePython';

/** The bundled wheel, e.g. dist-wheel/cleveragents-0.1.0-py3-none-any.whl; null when absent. */
export function bundledWheel(extensionPath: string): { file: string; version: string } | null {
  const folder = path.join(extensionPath, 'dist-wheel');
  let names: string[];
  try {
    names = fs.readdirSync(folder);
  } catch {
    return null;
  }
  const wheel = names.filter((name) => /^cleveragents-[^-]+-.*\.whl$/.test(name)).sort().at(-1);
  if (wheel === undefined) return null;
  return { file: path.join(folder, wheel), version: wheel.split('-')[1] ?? '' };
}

export function venvPython(venv: string): string {
  return process.platform === 'win32' ? path.join(venv, 'Scripts', 'python.exe') : path.join(venv, 'bin', 'python');
}

export class PrivateEnvironment {
  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  get wheel(): { file: string; version: string } | null {
    return bundledWheel(this.context.extensionPath);
  }

  /** The private environment's Python, when one was set up and still exists. */
  get python(): string | null {
    const stored = this.context.globalState.get<string>(PRIVATE_PYTHON_KEY);
    return stored !== undefined && fs.existsSync(stored) ? stored : null;
  }

  /**
   * Asks whether to set up the private environment (`problem` says why the interpreter will
   * not do); returns its Python once it is ready, or null (declined, or it failed: the user
   * was told what to do).
   */
  async offer(basePython: string, problem: string): Promise<string | null> {
    const wheel = this.wheel;
    if (wheel === null) return null;
    const choice = await vscode.window.showWarningMessage(
      `${problem} cleveragents can set up its own Python environment (about 100 MB, needs PyPI) ` +
        `and use it from now on.`,
      'Set Up cleveragents',
      'Choose Interpreter',
    );
    if (choice === 'Choose Interpreter') {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'cleveragents.pythonPath');
      return null;
    }
    if (choice !== 'Set Up cleveragents') return null;
    return this.setUp(basePython, wheel.file);
  }

  async setUp(basePython: string, wheelFile: string): Promise<string | null> {
    const venv = path.join(this.context.globalStorageUri.fsPath, 'venv');
    const python = venvPython(venv);
    this.log.info(`setting up a private environment in ${venv} with ${basePython}`);
    try {
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'cleveragents: setting up', cancellable: false },
        async (progress) => {
          fs.mkdirSync(path.dirname(venv), { recursive: true });
          fs.rmSync(venv, { recursive: true, force: true });
          progress.report({ message: 'creating a virtual environment…' });
          await this.run(basePython, ['-m', 'venv', venv]);
          progress.report({ message: 'installing cleveragents and its dependencies from PyPI…', increment: 20 });
          await this.run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', wheelFile]);
          progress.report({ message: 'done', increment: 80 });
        },
      );
    } catch (error) {
      const reason = (error as Error).message;
      this.log.error(`setting up the private environment failed: ${reason}`);
      void vscode.window
        .showErrorMessage(
          `cleveragents could not set up its environment: ${reason}. Check the network access to PyPI ` +
            `and that ${basePython} can make virtual environments (Debian/Ubuntu: apt install python3-venv), ` +
            'then run "cleveragents: Restart the Daemon"; or set cleveragents.pythonPath to a Python that has cleveragents.',
          'Show Output',
        )
        .then((action) => {
          if (action === 'Show Output') this.log.show();
        });
      return null;
    }
    await this.context.globalState.update(PRIVATE_PYTHON_KEY, python);
    this.log.info(`private environment ready: ${python}`);
    void vscode.window.showInformationMessage('cleveragents is set up in its own environment.');
    return python;
  }

  /** Runs a command, its output into the log; rejects with the last lines on failure. */
  private run(command: string, args: string[]): Promise<void> {
    this.log.info(`$ ${command} ${args.join(' ')}`);
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
      const tail: string[] = [];
      const collect = (chunk: Buffer): void => {
        for (const line of chunk.toString('utf8').split(/\r?\n/)) {
          if (line.trim() === '') continue;
          this.log.info(line);
          tail.push(line);
          if (tail.length > 5) tail.shift();
        }
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.on('error', (error) => reject(new Error(`${command} could not run: ${error.message}`)));
      child.on('close', (code) => {
        if (code === 0) resolve();
        else reject(new Error(`\`${path.basename(command)} ${args.slice(0, 2).join(' ')}\` failed (exit ${code}): ${tail.join(' ')}`));
      });
    });
  }
}
