// Assistant text as markdown: `marked` parses it, DOMPurify cleans the result with a strict
// allow-list, and only then does it reach the page. Two walls, because model text is
// untrusted: marked's `html` tokens (raw HTML in the text) are escaped to plain text, and
// whatever else slips through the parser meets a sanitizer that keeps no script, no event
// handler, no image, no style and no link that is not http(s) or mailto.
//
// After sanitizing, code blocks get a copy button and things that look like workspace paths
// (`src/app.ts`, `hello.txt:12`) become links the host opens in an editor (it checks the path
// is inside the workspace). The page never navigates: every link click goes to the host.

import DOMPurify from 'dompurify';
import { Marked, type Tokens } from 'marked';

const ALLOWED_TAGS = [
  'p', 'br', 'hr', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'blockquote', 'pre',
  'code', 'em', 'strong', 'del', 's', 'a', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'span',
];
const ALLOWED_ATTR = ['href', 'title', 'start', 'align', 'class'];
const SAFE_URL = /^(?:https?:|mailto:)/i;

const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    // Raw HTML in the model's text is shown as the text it is.
    html(token: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(token.text);
    },
    // Images are never loaded (the CSP forbids it anyway): show the alt text and the address.
    image(token: Tokens.Image): string {
      return escapeHtml(`[image: ${token.text || token.href}]`);
    },
  },
});

let hooked = false;
function purifier(): typeof DOMPurify {
  if (!hooked) {
    hooked = true;
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.nodeName === 'A') {
        const href = node.getAttribute('href') ?? '';
        if (!SAFE_URL.test(href)) node.removeAttribute('href');
      }
      if (node.hasAttribute('class')) {
        // Only the language marker of fenced code keeps a class.
        const language = /^language-[\w+#.-]{1,32}$/.exec(node.getAttribute('class') ?? '');
        if (language === null) node.removeAttribute('class');
        else node.setAttribute('class', language[0]);
      }
    });
  }
  return DOMPurify;
}

/** Model text to a sanitized fragment (paths linked, code blocks with copy buttons). */
export function renderMarkdown(text: string): DocumentFragment {
  const html = marked.parse(text, { async: false }).trim();
  const fragment = purifier().sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ALLOW_DATA_ATTR: false,
    ALLOW_ARIA_ATTR: false,
    RETURN_DOM_FRAGMENT: true,
  });
  decorate(fragment);
  return fragment;
}

function decorate(fragment: DocumentFragment): void {
  for (const link of fragment.querySelectorAll('a')) {
    link.setAttribute('data-testid', 'md-link');
    const href = link.getAttribute('href');
    if (href !== null) link.setAttribute('title', href);
  }
  for (const pre of fragment.querySelectorAll('pre')) {
    const wrapper = document.createElement('div');
    wrapper.className = 'code-block';
    wrapper.setAttribute('data-testid', 'code-block');
    const copy = document.createElement('button');
    copy.type = 'button';
    copy.className = 'copy-code';
    copy.textContent = 'Copy';
    copy.setAttribute('data-testid', 'copy-code');
    copy.setAttribute('aria-label', 'Copy the code');
    pre.replaceWith(wrapper);
    wrapper.append(copy, pre);
  }
  // Inline code that is exactly a path, then paths in plain text.
  for (const code of fragment.querySelectorAll('code')) {
    if (code.parentElement?.tagName === 'PRE') continue;
    const match = matchWholePath(code.textContent ?? '');
    if (match !== null) {
      const link = pathLink(match.path, match.line, code.textContent ?? '');
      link.replaceChildren(code.cloneNode(true));
      code.replaceWith(link);
    }
  }
  linkPathsIn(fragment);
}

// A path: optional ./ or ../ parts, then segments, ending in a file name with an extension;
// optionally :line (and :column, ignored). Either it has a slash, or its extension is one a
// source file has, so "e.g." or "v1.2" are not links.
const PATH_PATTERN =
  /(?<![\w/.@:-])((?:\.{1,2}\/)?(?:[\w@+-][\w.@+-]*\/)*[\w@+-][\w.@+-]*\.([A-Za-z][A-Za-z0-9]{0,7}))(?::(\d{1,7})(?::\d{1,5})?)?(?![\w/-])/g;
const KNOWN_EXTENSIONS = new Set(
  (
    'ts tsx js jsx mjs cjs json md txt py pyi rs go java kt c h cc cpp hpp cs rb php swift sh bash zsh ' +
    'toml yaml yml ini cfg html css scss vue svelte sql lua vim xml csv lock gradle mk cmake ex exs ' +
    'erl hs ml scala dart r jl tf proto graphql env'
  ).split(' '),
);

export interface PathMatch {
  path: string;
  line: number | null;
  start: number;
  end: number;
}

/** The path-like things in `text`, for linking. */
export function findPaths(text: string): PathMatch[] {
  const found: PathMatch[] = [];
  for (const match of text.matchAll(PATH_PATTERN)) {
    const path = match[1] ?? '';
    const extension = (match[2] ?? '').toLowerCase();
    if (!path.includes('/') && !KNOWN_EXTENSIONS.has(extension)) continue;
    if (/^\d/.test(extension) || path.includes('//')) continue;
    const line = match[3] === undefined ? null : Number(match[3]);
    const start = match.index ?? 0;
    found.push({ path, line, start, end: start + match[0].length });
  }
  return found;
}

function matchWholePath(text: string): PathMatch | null {
  const trimmed = text.trim();
  const [match] = findPaths(trimmed);
  return match !== undefined && match.start === 0 && match.end === trimmed.length ? match : null;
}

function linkPathsIn(root: ParentNode): void {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) =>
      node.parentElement?.closest('a, pre, code') ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  const nodes: Text[] = [];
  for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
    nodes.push(node as Text);
  }
  for (const node of nodes) {
    const text = node.data;
    const matches = findPaths(text);
    if (matches.length === 0) continue;
    const parts: Node[] = [];
    let at = 0;
    for (const match of matches) {
      if (match.start > at) parts.push(document.createTextNode(text.slice(at, match.start)));
      parts.push(pathLink(match.path, match.line, text.slice(match.start, match.end)));
      at = match.end;
    }
    if (at < text.length) parts.push(document.createTextNode(text.slice(at)));
    node.replaceWith(...parts);
  }
}

/** A link the host opens as a workspace file (`data-path`, `data-line`). */
export function pathLink(path: string, line: number | null, label: string): HTMLAnchorElement {
  const link = document.createElement('a');
  link.className = 'path-link';
  link.textContent = label;
  link.setAttribute('data-testid', 'path-link');
  link.setAttribute('data-path', path);
  link.setAttribute('role', 'link');
  link.setAttribute('tabindex', '0');
  link.title = line === null ? `Open ${path}` : `Open ${path} at line ${line}`;
  if (line !== null) link.setAttribute('data-line', String(line));
  return link;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
