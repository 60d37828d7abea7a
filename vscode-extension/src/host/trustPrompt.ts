// The question `cleveragents/trustWorkspace` puts to the user: may this folder's MCP config
// start these programs? Shows the exact command lines, quoted as a shell would need them, the
// absolute program each one runs and every variable with its value, so what is trusted is what
// will run. Pure.

import type { TrustWorkspaceParams } from '../shared/wireAdditions';

export const TRUST = 'Trust';
export const DONT_TRUST = "Don't Trust";

export interface TrustQuestion {
  message: string;
  detail: string;
}

type Server = TrustWorkspaceParams['servers'][number];
type Variable = Server['env'][number];
/** A server as any daemon sends it: one before protocol 1.2 sends no `program` nor `env`. */
export type ShownServer = Omit<Server, 'program' | 'programInWorkspace' | 'env'> &
  Partial<Pick<Server, 'program' | 'programInWorkspace' | 'env'>>;

export function trustQuestion(params: Omit<TrustWorkspaceParams, 'servers'> & { servers: ShownServer[] }): TrustQuestion {
  const count = params.servers.length === 1 ? 'one program' : `${params.servers.length} programs`;
  const lines = params.servers.flatMap(serverLines);
  return {
    message: `${params.configPath} asks to start ${count} as tools for runs in ${params.sandboxRoot}. Trust it?`,
    detail: [
      ...lines,
      '',
      'They run with your permissions, outside the sandbox. Trust is kept for exactly what is shown ' +
        `(sha256 ${params.configHash.slice(0, 12)}…): a change to the file, to a program or to a flagged value asks again. ` +
        "Don't Trust: runs go on without these tools.",
    ].join('\n'),
  };
}

const FLAG_PROGRAM = '  [!] a program inside the workspace';
const FLAG_VARIABLE = '  [!] changes which program runs or what it loads';

/**
 * One server as the daemon's other fronts show it (service/trust.py, `TrustedServer.describe`):
 * the command as written, the program that will run (flagged when the workspace holds it) and
 * every variable with its value (secret-looking ones masked, those that change what runs
 * flagged). Older daemons send only `envNames`: then the names are listed.
 */
export function serverLines(server: ShownServer): string[] {
  const lines = [`${server.name}: ${[server.command, ...server.args].map(shellQuote).join(' ')}`];
  if (server.env === undefined) {
    const names = server.envNames ?? [];
    if (names.length > 0) lines[0] += ` (sets ${names.join(', ')})`;
    return lines;
  }
  if (server.program) {
    lines.push(`    runs ${shellQuote(server.program)}${server.programInWorkspace ? FLAG_PROGRAM : ''}`);
  } else {
    lines.push('    runs nothing: the command was not found on its PATH');
  }
  for (const variable of server.env) lines.push(`    sets ${variableLine(variable)}`);
  return lines;
}

function variableLine(variable: Variable): string {
  if (variable.masked || variable.value === null) return `${variable.name}=<hidden: ${variable.length} characters>`;
  let line = `${variable.name}=${shellQuote(variable.value)}`;
  if (variable.expanded !== null && variable.expanded !== undefined) line += ` (= ${shellQuote(variable.expanded)})`;
  if (variable.changesWhatRuns) line += FLAG_VARIABLE;
  return line;
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
