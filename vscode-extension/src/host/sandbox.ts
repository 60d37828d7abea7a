// The sandbox root is a workspace folder: tools reach nothing outside it.

export interface FolderLike {
  name: string;
  uri: { scheme: string; fsPath: string };
}

export type SandboxChoice<F extends FolderLike> =
  | { kind: 'none'; message: string }
  | { kind: 'folder'; folder: F }
  | { kind: 'pick'; folders: F[] };

export const NO_FOLDER_MESSAGE =
  'cleveragents needs a folder: tools run inside the workspace folder and nowhere else. ' +
  'Open a folder, then run again.';

/**
 * Which folder a run uses. `preferred` (a path, e.g. the sandbox of the run being continued)
 * wins when it is still open; several local folders mean the user picks.
 */
export function chooseSandbox<F extends FolderLike>(
  folders: readonly F[] | undefined,
  preferred?: string | null,
): SandboxChoice<F> {
  const local = (folders ?? []).filter((folder) => folder.uri.scheme === 'file');
  if (local.length === 0) {
    const remoteOnly = (folders ?? []).length > 0;
    return {
      kind: 'none',
      message: remoteOnly
        ? 'cleveragents needs a folder on this machine\'s disk; the open folders are not local files.'
        : NO_FOLDER_MESSAGE,
    };
  }
  if (preferred) {
    const match = local.find((folder) => samePath(folder.uri.fsPath, preferred));
    if (match !== undefined) {
      return { kind: 'folder', folder: match };
    }
  }
  const [only] = local;
  if (local.length === 1 && only !== undefined) {
    return { kind: 'folder', folder: only };
  }
  return { kind: 'pick', folders: local };
}

function samePath(a: string, b: string): boolean {
  const strip = (value: string): string => value.replace(/[\\/]+$/, '');
  return strip(a) === strip(b);
}
