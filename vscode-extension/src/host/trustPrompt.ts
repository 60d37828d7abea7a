// The question `cleveragents/trustWorkspace` puts to the user: may this folder's MCP config
// start these programs? Shows the exact command lines, quoted as a shell would need them, so
// what is trusted is what will run. Pure.

import type { TrustWorkspaceParams } from '../shared/wireAdditions';

export const TRUST = 'Trust';
export const DONT_TRUST = "Don't Trust";

export interface TrustQuestion {
  message: string;
  detail: string;
}

export function trustQuestion(params: TrustWorkspaceParams): TrustQuestion {
  const count = params.servers.length === 1 ? 'one program' : `${params.servers.length} programs`;
  const lines = params.servers.map((server) => {
    const line = `${server.name}: ${[server.command, ...server.args].map(shellQuote).join(' ')}`;
    const env = server.envNames ?? [];
    return env.length > 0 ? `${line} (sets ${env.join(', ')})` : line;
  });
  return {
    message: `${params.configPath} asks to start ${count} as tools for runs in ${params.sandboxRoot}. Trust it?`,
    detail: [
      ...lines,
      '',
      'They run with your permissions, outside the sandbox. Trust is kept for this exact file ' +
        `(sha256 ${params.configHash.slice(0, 12)}…): a change to it asks again. ` +
        "Don't Trust: runs go on without these tools.",
    ].join('\n'),
  };
}

// Control characters (C0, DEL, C1) and invisible format characters: zero-width ones, line and
// paragraph separators, bidi embeddings, overrides and isolates, the BOM.
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/;

/**
 * A word as a shell would need it: bare when safe, else in single quotes; with control or
 * invisible format characters, `$'…'` with them escaped, so a newline cannot pass for another
 * line of the list and a right-to-left override cannot reorder what is shown.
 */
export function shellQuote(word: string): string {
  if (word !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  if (HIDDEN.test(word)) {
    const escaped = Array.from(word, (char) => {
      if (char === '\\' || char === "'") return `\\${char}`;
      if (char === '\n') return '\\n';
      if (char === '\t') return '\\t';
      if (!HIDDEN.test(char)) return char;
      const code = char.charCodeAt(0);
      return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
    }).join('');
    return `$'${escaped}'`;
  }
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
