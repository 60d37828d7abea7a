// API keys live in VS Code's SecretStorage only: never in settings, logs or the webview.
// The daemon gets them through its environment (see launch.ts).

import type * as vscode from 'vscode';

import { API_KEY_VARIABLES, type KeyedProvider } from './launch';

const SECRET_PREFIX = 'cleveragents.apiKey.';

export class ApiKeyStore {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  async get(provider: KeyedProvider): Promise<string | undefined> {
    return this.secrets.get(SECRET_PREFIX + provider);
  }

  async set(provider: KeyedProvider, key: string): Promise<void> {
    await this.secrets.store(SECRET_PREFIX + provider, key);
  }

  async delete(provider: KeyedProvider): Promise<void> {
    await this.secrets.delete(SECRET_PREFIX + provider);
  }

  async all(): Promise<Partial<Record<KeyedProvider, string>>> {
    const keys: Partial<Record<KeyedProvider, string>> = {};
    for (const provider of Object.keys(API_KEY_VARIABLES) as KeyedProvider[]) {
      const key = await this.get(provider);
      if (key) {
        keys[provider] = key;
      }
    }
    return keys;
  }

  /** Fires when a key is stored or deleted (also from another window). */
  onDidChange(listener: () => void): vscode.Disposable {
    return this.secrets.onDidChange((event) => {
      if (event.key.startsWith(SECRET_PREFIX)) {
        listener();
      }
    });
  }
}
