// How the daemon is started: check the interpreter first (so a missing Python or package is a
// clear message with a fix, not a dead language client), then the command line and environment.

import { execFile } from 'node:child_process';

/** Environment variable each provider reads its API key from. */
export const API_KEY_VARIABLES = {
  anthropic: 'ANTHROPIC_API_KEY',
  openai: 'OPENAI_API_KEY',
} as const;

export type KeyedProvider = keyof typeof API_KEY_VARIABLES;

// Runs under any Python 3: it must report an old or broken install, not fail on it.
const PROBE = `
import json, sys
info = {"python": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3]}
try:
    import importlib.util
    if importlib.util.find_spec("cleveragents") is None:
        info["installed"] = False
    else:
        import cleveragents
        import cleveragents.daemon.server
        info["installed"] = True
        info["package"] = getattr(cleveragents, "__version__", "unknown")
        for module in ("cleveragents.daemon", "cleveragents", "cleveragents.cli"):
            try:
                runnable = importlib.util.find_spec(module + ".__main__") is not None
            except ImportError:
                runnable = False
            if runnable or module == "cleveragents.cli":
                info["module"] = module
                break
except Exception as exc:
    info["installed"] = True
    info["importError"] = "%s: %s" % (type(exc).__name__, exc)
print(json.dumps(info))
`;

export interface ProbeSuccess {
  ok: true;
  python: string;
  pythonVersion: string;
  packageVersion: string;
  /**
   * The module to run with `-m`: `cleveragents.daemon` (the daemon itself), else the CLI
   * (`cleveragents`, or `cleveragents.cli` on packages without a `__main__`) with `serve`.
   */
  module: string;
}

export interface ProbeFailure {
  ok: false;
  kind: 'python-missing' | 'package-missing' | 'package-broken' | 'probe-failed';
  /** What is wrong and how to fix it, in one message for the user. */
  message: string;
}

export type ProbeResult = ProbeSuccess | ProbeFailure;

const PROBE_TIMEOUT_MS = 30_000;

/** Runs the interpreter once to see whether it exists and has the package. */
export function probeInterpreter(python: string, env: NodeJS.ProcessEnv = process.env): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(
      python,
      ['-c', PROBE],
      { env, timeout: PROBE_TIMEOUT_MS, windowsHide: true, maxBuffer: 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null && (error as NodeJS.ErrnoException).code === 'ENOENT') {
          resolve({
            ok: false,
            kind: 'python-missing',
            message:
              `Python was not found at ${python}: install Python 3.11 or later, ` +
              'or set cleveragents.pythonPath to an interpreter that has cleveragents installed.',
          });
          return;
        }
        resolve(interpretProbe(python, stdout, stderr, error));
      },
    );
  });
}

export function interpretProbe(
  python: string,
  stdout: string,
  stderr: string,
  error: Error | null,
): ProbeResult {
  const line = stdout.trim().split('\n').pop() ?? '';
  let info: Record<string, unknown>;
  try {
    info = JSON.parse(line) as Record<string, unknown>;
  } catch {
    const detail = (stderr.trim() || error?.message || 'no output').split('\n').slice(-3).join(' ');
    return {
      ok: false,
      kind: 'probe-failed',
      message:
        `${python} could not be run as Python (${detail}). ` +
        'Set cleveragents.pythonPath to a Python 3.11+ interpreter that has cleveragents installed.',
    };
  }
  const where = typeof info.python === 'string' && info.python ? info.python : python;
  if (info.installed !== true) {
    return {
      ok: false,
      kind: 'package-missing',
      message:
        `cleveragents is not installed for ${where}: run \`${where} -m pip install cleveragents\` ` +
        'or set cleveragents.pythonPath to an interpreter that has it.',
    };
  }
  if (typeof info.importError === 'string') {
    return {
      ok: false,
      kind: 'package-broken',
      message:
        `cleveragents is installed for ${where} (Python ${String(info.version)}) but cannot be ` +
        `imported: ${info.importError}. It needs Python 3.11 or later; reinstall it with ` +
        `\`${where} -m pip install --upgrade cleveragents\` or set cleveragents.pythonPath.`,
    };
  }
  return {
    ok: true,
    python: where,
    pythonVersion: String(info.version),
    packageVersion: String(info.package),
    module: typeof info.module === 'string' ? info.module : 'cleveragents.daemon',
  };
}

export interface LaunchOptions {
  python: string;
  module: string;
  historyPath: string;
}

/**
 * `<python> -m cleveragents.daemon --stdio [--history PATH]`, or through the CLI:
 * `<python> -m cleveragents serve --stdio [--history PATH]`.
 */
export function daemonArguments(options: LaunchOptions): string[] {
  const args =
    options.module === 'cleveragents.daemon'
      ? ['-m', options.module, '--stdio']
      : ['-m', options.module, 'serve', '--stdio'];
  if (options.historyPath) {
    args.push('--history', options.historyPath);
  }
  return args;
}

/** The daemon's environment: ours, plus the stored API keys (they win over inherited ones). */
export function daemonEnvironment(
  base: NodeJS.ProcessEnv,
  keys: Partial<Record<KeyedProvider, string>>,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const provider of Object.keys(API_KEY_VARIABLES) as KeyedProvider[]) {
    const key = keys[provider];
    if (key) {
      env[API_KEY_VARIABLES[provider]] = key;
    }
  }
  return env;
}

/** What the output channel says about a start: the command, and which keys are set, never their values. */
export function describeLaunch(
  options: LaunchOptions,
  keys: Partial<Record<KeyedProvider, string>>,
): string {
  const stored = (Object.keys(API_KEY_VARIABLES) as KeyedProvider[])
    .filter((provider) => Boolean(keys[provider]))
    .map((provider) => API_KEY_VARIABLES[provider]);
  const command = [options.python, ...daemonArguments(options)].map(quoteArgument).join(' ');
  const secrets = stored.length > 0 ? ` (API keys from secret storage: ${stored.join(', ')})` : '';
  return `starting the daemon: ${command}${secrets}`;
}

function quoteArgument(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
