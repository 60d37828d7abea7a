// The webview's page. Scripts run only with the page's nonce and styles come only from the
// extension's own files (strict Content-Security-Policy); everything dynamic is built by
// dist/webview.js with DOM calls, never with inline markup.

import { randomBytes } from 'node:crypto';

export interface WebviewPageOptions {
  /** `webview.cspSource`: the origin the page may load its script and styles from. */
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUri: string;
}

export function renderWebviewHtml(options: WebviewPageOptions): string {
  const { cspSource, nonce } = options;
  const csp = [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttribute(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escapeAttribute(options.styleUri)}">
<title>cleveragents runs</title>
</head>
<body>
<main class="app" aria-label="cleveragents">
  <form class="composer" data-testid="composer" novalidate>
    <label class="composer-label" for="prompt">Prompt</label>
    <div class="prompt-box">
      <textarea id="prompt" data-testid="prompt" rows="3" placeholder="Ask for something in this workspace (Ctrl+Enter runs, @ adds a file)" aria-describedby="prompt-hint" aria-autocomplete="list" aria-controls="mentions"></textarea>
      <ul id="mentions" class="mentions" data-testid="mentions" role="listbox" aria-label="Workspace files" hidden></ul>
    </div>
    <p id="prompt-hint" class="sr-only">Ctrl+Enter or Cmd+Enter starts a run. Type @ and a file name to attach a file; paste or drop an image to attach it. Continue sends the prompt as a follow-up to the run on display.</p>
    <div class="buttons" role="group" aria-label="Run controls">
      <button type="submit" data-testid="run" class="primary">Run</button>
      <button type="button" data-testid="continue" class="secondary" title="Send the prompt as a follow-up to the run on display">Continue</button>
      <button type="button" data-testid="stop" class="secondary">Stop</button>
    </div>
    <div class="context-chips" data-testid="context-chips" aria-label="Attached context"></div>
    <div class="context-chips image-chips" data-testid="image-chips" aria-label="Attached images"></div>
    <div class="composer-tools">
      <button type="button" class="link" data-testid="add-selection">+ Selection</button>
      <button type="button" class="link" data-testid="add-file">+ Current file</button>
    </div>
    <div class="run-options" role="group" aria-label="Run options">
      <select data-testid="pick-provider" aria-label="Provider"></select>
      <input data-testid="pick-model" aria-label="Model" placeholder="default model" spellcheck="false">
      <select data-testid="pick-profile" aria-label="Automation profile"></select>
    </div>
  </form>
  <div class="status-bar">
    <div class="status" data-testid="status" role="status" aria-live="polite"></div>
    <div class="status-actions" data-testid="status-actions" hidden>
      <button type="button" class="link" data-action="showOutput">Show output</button>
      <button type="button" class="link" data-action="openSettings">Settings</button>
      <button type="button" class="link" data-action="restartDaemon">Restart the daemon</button>
    </div>
  </div>
  <div class="notice" data-testid="notice" role="alert" hidden></div>
  <nav class="run-tabs" data-testid="run-tabs" aria-label="Runs of this session" hidden></nav>
  <section class="run" aria-labelledby="run-heading">
    <h2 id="run-heading" class="section-heading" data-testid="run-heading">No run yet</h2>
    <p class="run-meta" data-testid="run-meta"></p>
    <div class="run-images" data-testid="run-images" aria-label="The prompt's images" hidden></div>
    <p class="run-usage" data-testid="run-usage" hidden>Tokens <span data-testid="run-tokens">—</span> · Cost <span data-testid="run-cost">—</span></p>
    <p class="run-instructions" data-testid="run-instructions" hidden></p>
    <p class="run-snapshot" data-testid="run-snapshot" role="status" hidden></p>
    <section class="run-plan" data-testid="run-plan" aria-labelledby="plan-title" hidden>
      <h3 id="plan-title" class="plan-title" data-testid="plan-title">Plan</h3>
      <ol class="plan-steps" data-testid="plan-steps"></ol>
    </section>
    <div class="transcript" data-testid="transcript" role="list" aria-labelledby="run-heading" aria-live="polite" aria-relevant="additions"></div>
    <p class="empty" data-testid="transcript-empty">Type a prompt and press Run. Every tool call the agent makes shows up here as it happens.</p>
    <div class="scroll-anchor" aria-hidden="true"></div>
  </section>
  <details class="history" data-testid="history" open>
    <summary class="section-heading">History <span class="count" data-testid="history-count"></span></summary>
    <div class="history-tools"><button type="button" class="link" data-testid="history-refresh">Refresh</button></div>
    <p class="history-note" data-testid="history-note"></p>
    <ul class="history-list" data-testid="history-list" aria-label="Past runs"></ul>
  </details>
  <div class="sr-only" data-testid="announcer" aria-live="polite" aria-atomic="true"></div>
  <div class="sr-only" data-testid="alert-announcer" aria-live="assertive" aria-atomic="true"></div>
</main>
<script nonce="${escapeAttribute(nonce)}" src="${escapeAttribute(options.scriptUri)}"></script>
</body>
</html>
`;
}

/** 192 random bits, fresh for every page. */
export function createNonce(): string {
  return randomBytes(24).toString('base64url');
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}
