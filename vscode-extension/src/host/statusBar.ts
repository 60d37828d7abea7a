// The status-bar item: shown while a run is going (or the daemon cannot start); a click
// opens the runs panel.

import * as vscode from 'vscode';

import type { RunStore } from './runStore';
import { statusText } from './statusText';

export class RunStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly stop: () => void;
  private scheduled = false;
  private running: boolean | null = null;

  constructor(private readonly store: RunStore) {
    this.item = vscode.window.createStatusBarItem('cleveragents.run', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'cleveragents run';
    this.item.command = 'cleveragents.showPanel';
    this.stop = store.onChange(() => this.schedule());
    this.update();
  }

  dispose(): void {
    this.stop();
    this.item.dispose();
  }

  // A busy run changes many times a second; the item needs no more than a few updates.
  private schedule(): void {
    if (this.scheduled) {
      return;
    }
    this.scheduled = true;
    setTimeout(() => {
      this.scheduled = false;
      this.update();
    }, 100);
  }

  private update(): void {
    const status = statusText(this.store);
    const running = this.store.activeRun !== null;
    if (running !== this.running) {
      this.running = running;
      void vscode.commands.executeCommand('setContext', 'cleveragents.running', running);
    }
    if (status === null) {
      this.item.hide();
      return;
    }
    this.item.text = status.text;
    this.item.tooltip = status.tooltip;
    this.item.backgroundColor = status.warning ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    this.item.show();
  }
}
