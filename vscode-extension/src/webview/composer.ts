// The composer's extras: run options (provider, model, profile), attached context chips,
// @ completion of workspace file names and / completion of the custom commands in the prompt
// box. The chips sit in the attachment row above the box (`composer-attachments`), where other
// kinds of attachment can add a row of their own.

import type { PromptCommandInfo } from '../protocol';
import type { ContextItem, RunOptionsView, WebviewMessage } from '../shared/messages';
import { el, required, setAttr, setText } from './dom';

const MENTION = /(^|\s)@([\w./-]*)$/;
/** A command name being typed: `/` first in the box, then the name so far (no space yet). */
const COMMAND = /^\/([\w.-]*)$/;

/** One line of the completion list: a file path, or a custom command. */
type Choice = { kind: 'file'; path: string } | { kind: 'command'; command: PromptCommandInfo };

export class Composer {
  private items: ContextItem[] = [];
  private options: RunOptionsView | null = null;
  private mentionQuery: string | null = null;
  private mentionTimer: ReturnType<typeof setTimeout> | null = null;
  private choices: Choice[] = [];
  /** The custom commands as last listed; null: not asked yet. */
  private commands: PromptCommandInfo[] | null = null;
  private commandQuery: string | null = null;
  private selected = 0;
  private readonly chips: HTMLElement;
  private readonly mentions: HTMLUListElement;
  private readonly provider: HTMLSelectElement;
  private readonly model: HTMLInputElement;
  private readonly profile: HTMLSelectElement;

  constructor(
    root: ParentNode,
    private readonly prompt: HTMLTextAreaElement,
    private readonly post: (message: WebviewMessage) => void,
    private readonly changed: () => void,
  ) {
    this.chips = required(root, '[data-testid="context-chips"]');
    this.mentions = required(root, '[data-testid="mentions"]');
    this.provider = required(root, '[data-testid="pick-provider"]');
    this.model = required(root, '[data-testid="pick-model"]');
    this.profile = required(root, '[data-testid="pick-profile"]');
    required<HTMLButtonElement>(root, '[data-testid="add-selection"]').addEventListener('click', () =>
      this.post({ type: 'addContext', what: 'selection' }),
    );
    required<HTMLButtonElement>(root, '[data-testid="add-file"]').addEventListener('click', () =>
      this.post({ type: 'addContext', what: 'file' }),
    );
    for (const control of [this.provider, this.profile]) control.addEventListener('change', () => this.sendOptions());
    this.model.addEventListener('change', () => this.sendOptions());
    this.chips.addEventListener('click', (event) => {
      const index = (event.target as Element | null)?.closest('button')?.getAttribute('data-index');
      if (index !== null && index !== undefined) {
        this.items.splice(Number(index), 1);
        this.renderChips();
      }
    });
    this.prompt.addEventListener('input', () => this.onInput());
    this.prompt.addEventListener('keydown', (event) => this.onKey(event), { capture: true });
    this.prompt.addEventListener('blur', () => setTimeout(() => this.closeMentions(), 150));
    this.mentions.addEventListener('mousedown', (event) => {
      const index = (event.target as Element | null)?.closest('li')?.getAttribute('data-index');
      const choice = index === null || index === undefined ? undefined : this.choices[Number(index)];
      if (choice !== undefined) {
        event.preventDefault();
        this.choose(choice);
      }
    });
  }

  get context(): ContextItem[] {
    return [...this.items];
  }

  /** After a run is sent: the chips were used. */
  clearContext(): void {
    this.items = [];
    this.renderChips();
  }

  addContext(item: ContextItem): void {
    const same = this.items.findIndex(
      (known) => known.path === item.path && known.startLine === item.startLine && known.endLine === item.endLine,
    );
    if (same >= 0) this.items[same] = item;
    else this.items.push(item);
    this.renderChips();
  }

  showOptions(options: RunOptionsView): void {
    this.options = options;
    fill(this.provider, options.providers, options.provider, options.defaults.provider);
    fill(this.profile, options.profiles, options.automationProfile, options.defaults.automationProfile);
    if (document.activeElement !== this.model) this.model.value = options.model;
    this.model.placeholder = options.defaults.model && options.provider === options.defaults.provider
      ? `${options.defaults.model} (setting)`
      : 'default model';
  }

  showFiles(query: string, paths: string[]): void {
    if (query !== this.mentionQuery) return; // an answer to an older keystroke
    this.choices = paths.map((path) => ({ kind: 'file', path }));
    this.selected = 0;
    this.renderMentions();
  }

  /** The host's answer to `listCommands`. */
  showCommands(commands: PromptCommandInfo[]): void {
    this.commands = commands;
    if (this.commandQuery !== null) this.offerCommands(this.commandQuery);
  }

  private offerCommands(query: string): void {
    const typed = query.toLowerCase();
    this.choices = (this.commands ?? [])
      .filter((command) => command.name.toLowerCase().startsWith(typed))
      .map((command) => ({ kind: 'command', command }));
    this.selected = 0;
    this.renderMentions();
  }

  private sendOptions(): void {
    if (this.options === null) return;
    this.post({
      type: 'setOptions',
      options: { provider: this.provider.value, model: this.model.value.trim(), automationProfile: this.profile.value },
    });
  }

  private renderChips(): void {
    this.chips.replaceChildren(
      ...this.items.map((item, index) =>
        el(
          'span',
          { className: 'chip', attrs: { 'data-testid': 'context-chip', title: item.path } },
          el('span', { text: item.text !== null && item.startLine !== null ? `${item.label} (selection)` : item.label }),
          el('button', {
            className: 'chip-remove',
            text: '×',
            attrs: { type: 'button', 'data-index': String(index), 'aria-label': `Remove ${item.label}` },
          }),
        ),
      ),
    );
    this.changed();
  }

  // -- @ completion ----------------------------------------------------------------------------

  private onInput(): void {
    const before = this.prompt.value.slice(0, this.prompt.selectionStart);
    const command = COMMAND.exec(before);
    if (command !== null) {
      const query = command[1] ?? '';
      // Asked once per `/` typed: a command file added meanwhile shows the next time.
      if (this.commandQuery === null || query === '') this.post({ type: 'listCommands' });
      this.commandQuery = query;
      this.mentionQuery = null;
      if (this.commands !== null) this.offerCommands(query);
      return;
    }
    this.commandQuery = null;
    const match = MENTION.exec(before);
    if (match === null) {
      this.closeMentions();
      return;
    }
    this.mentionQuery = match[2] ?? '';
    if (this.mentionTimer !== null) clearTimeout(this.mentionTimer);
    const query = this.mentionQuery;
    this.mentionTimer = setTimeout(() => this.post({ type: 'findFiles', query }), 120);
  }

  private onKey(event: KeyboardEvent): void {
    if (this.mentions.hidden || this.choices.length === 0) return;
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const step = event.key === 'ArrowDown' ? 1 : -1;
      this.selected = (this.selected + step + this.choices.length) % this.choices.length;
      this.renderMentions();
    } else if (event.key === 'Enter' || event.key === 'Tab') {
      const choice = this.choices[this.selected];
      if (choice !== undefined && !(event.ctrlKey || event.metaKey || event.shiftKey)) {
        event.preventDefault();
        event.stopImmediatePropagation();
        this.choose(choice);
      }
    } else if (event.key === 'Escape') {
      event.preventDefault();
      this.closeMentions();
    }
  }

  private choose(choice: Choice): void {
    if (choice.kind === 'command') {
      const after = this.prompt.value.slice(this.prompt.selectionStart);
      const inserted = `/${choice.command.name} `;
      this.prompt.value = inserted + after.replace(/^\S*\s?/, '');
      this.prompt.setSelectionRange(inserted.length, inserted.length);
      this.prompt.dispatchEvent(new Event('input'));
      this.closeMentions();
      return;
    }
    const path = choice.path;
    const caret = this.prompt.selectionStart;
    const before = this.prompt.value.slice(0, caret);
    const after = this.prompt.value.slice(caret);
    const start = before.lastIndexOf('@');
    const inserted = `@${path} `;
    this.prompt.value = before.slice(0, start) + inserted + after;
    const at = start + inserted.length;
    this.prompt.setSelectionRange(at, at);
    this.prompt.dispatchEvent(new Event('input'));
    this.closeMentions();
    this.post({ type: 'mention', path });
  }

  private closeMentions(): void {
    this.mentionQuery = null;
    this.commandQuery = null;
    this.choices = [];
    this.mentions.hidden = true;
    this.prompt.removeAttribute('aria-activedescendant');
  }

  private renderMentions(): void {
    this.mentions.hidden = this.choices.length === 0;
    const commands = this.choices.some((choice) => choice.kind === 'command');
    setAttr(this.mentions, 'aria-label', commands ? 'Custom commands' : 'Workspace files');
    this.mentions.replaceChildren(
      ...this.choices.map((choice, index) => {
        const attrs = {
          id: `mention-${index}`,
          role: 'option',
          'data-index': String(index),
          'aria-selected': String(index === this.selected),
        };
        if (choice.kind === 'file') {
          return el('li', { text: choice.path, attrs: { ...attrs, 'data-testid': 'mention', 'data-path': choice.path } });
        }
        const { name, description, argumentHint, source } = choice.command;
        return el(
          'li',
          { className: 'command-option', attrs: { ...attrs, 'data-testid': 'command-option', 'data-name': name, title: `${source} command` } },
          el('span', { className: 'command-name', text: `/${name}${argumentHint ? ` ${argumentHint}` : ''}` }),
          el('span', { className: 'command-description', text: description }),
        );
      }),
    );
    if (this.choices.length > 0) this.prompt.setAttribute('aria-activedescendant', `mention-${this.selected}`);
    else this.prompt.removeAttribute('aria-activedescendant');
  }
}

function fill(select: HTMLSelectElement, values: readonly string[], value: string, fallback: string): void {
  if (select.options.length !== values.length) {
    select.replaceChildren(...values.map((name) => el('option', { text: name, attrs: { value: name } })));
  }
  for (const option of select.options) {
    setText(option, option.value === fallback ? `${option.value} (setting)` : option.value);
  }
  select.value = value;
}
