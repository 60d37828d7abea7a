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
  <nav class="run-tabs" data-testid="run-tabs" aria-label="Conversations of this session" hidden></nav>
  <details class="history" data-testid="history" open>
    <summary class="section-heading">History <span class="count" data-testid="history-count"></span></summary>
    <div class="history-tools"><button type="button" class="link" data-testid="history-refresh">Refresh</button></div>
    <p class="history-note" data-testid="history-note"></p>
    <ul class="history-list" data-testid="history-list" aria-label="Past conversations"></ul>
  </details>
  <section class="run" aria-labelledby="run-heading">
    <h2 id="run-heading" class="section-heading" data-testid="run-heading">New conversation</h2>
    <p class="run-meta" data-testid="run-meta"></p>
    <div class="run-images" data-testid="run-images" aria-label="The prompt's images" hidden></div>
    <p class="run-usage" data-testid="run-usage" hidden>Tokens <span data-testid="run-tokens">—</span> · Cost <span data-testid="run-cost">—</span></p>
    <p class="run-instructions" data-testid="run-instructions" hidden></p>
    <p class="run-snapshot" data-testid="run-snapshot" role="status" hidden></p>
    <section class="run-plan" data-testid="run-plan" aria-labelledby="plan-title" hidden>
      <h3 id="plan-title" class="plan-title" data-testid="plan-title">Plan</h3>
      <ol class="plan-steps" data-testid="plan-steps"></ol>
    </section>
    <div class="thread" data-testid="thread">
      <div class="thread-turns" data-testid="thread-before"></div>
      <div class="turn turn-live" data-testid="turn-live">
        <div class="turn-heading" data-testid="turn-heading" hidden></div>
        <div class="transcript" data-testid="transcript" role="list" aria-labelledby="run-heading" aria-live="polite" aria-relevant="additions"></div>
      </div>
      <div class="thread-turns" data-testid="thread-after"></div>
    </div>
    <p class="empty" data-testid="transcript-empty">Type a prompt below and press Enter. Every tool call the agent makes shows up here as it happens; each prompt continues the conversation until you press New.</p>
    <div class="scroll-anchor" aria-hidden="true"></div>
  </section>
  <div class="status-bar">
    <div class="status" data-testid="status" role="status" aria-live="polite"></div>
    <div class="status-actions" data-testid="status-actions" hidden>
      <button type="button" class="link" data-action="showOutput">Show output</button>
      <button type="button" class="link" data-action="openSettings">Settings</button>
      <button type="button" class="link" data-action="restartDaemon">Restart the daemon</button>
    </div>
  </div>
  <div class="notice" data-testid="notice" role="alert" hidden></div>
  <form class="composer" data-testid="composer" novalidate>
    <label class="composer-label sr-only" for="prompt">Prompt</label>
    <div class="composer-attachments" data-testid="composer-attachments">
      <div class="context-chips" data-testid="context-chips" aria-label="Attached context"></div>
      <div class="context-chips image-chips" data-testid="image-chips" aria-label="Attached images"></div>
    </div>
    <div class="prompt-box">
      <textarea id="prompt" data-testid="prompt" rows="3" placeholder="Ask for something in this workspace (Enter sends, Shift+Enter new line, @ adds a file, / a command)" aria-describedby="prompt-hint" aria-autocomplete="list" aria-controls="mentions"></textarea>
      <ul id="mentions" class="mentions" data-testid="mentions" role="listbox" aria-label="Completions" hidden></ul>
    </div>
    <p id="prompt-hint" class="sr-only">Enter sends the prompt as the next turn of the conversation on display; Shift+Enter starts a new line; Up in an empty box recalls the last prompt; Escape stops the running turn. New starts another conversation. Type @ and a file name to attach a file, / for the custom commands; paste or drop an image to attach it.</p>
    <div class="buttons" role="group" aria-label="Conversation controls">
      <button type="submit" data-testid="run" class="primary">Send</button>
      <button type="button" data-testid="new-conversation" class="secondary" title="Start another conversation (the next prompt does not continue this one)">New</button>
      <button type="button" data-testid="stop" class="secondary" title="Stop the running turn (Escape)">Stop</button>
    </div>
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
