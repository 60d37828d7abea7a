// The composer's extras: run options (provider, model, profile), attached context chips,
// and @ completion of workspace file names in the prompt box.

import type { ContextItem, RunOptionsView, WebviewMessage } from '../shared/messages';
import { el, required, setText } from './dom';

const MENTION = /(^|\s)@([\w./-]*)$/;

export class Composer {
  private items: ContextItem[] = [];
  private options: RunOptionsView | null = null;
  private mentionQuery: string | null = null;
  private mentionTimer: ReturnType<typeof setTimeout> | null = null;
  private choices: string[] = [];
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
      const path = (event.target as Element | null)?.closest('li')?.getAttribute('data-path');
      if (path) {
        event.preventDefault();
        this.choose(path);
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
    this.choices = paths;
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
      const path = this.choices[this.selected];
      if (path !== undefined && !(event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        event.stopImmediatePropagation();
        this.choose(path);
      }
    } else if (event.key === 'Escape') {
      event.preventDefault();
      this.closeMentions();
    }
  }

  private choose(path: string): void {
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
    this.choices = [];
    this.mentions.hidden = true;
    this.prompt.removeAttribute('aria-activedescendant');
  }

  private renderMentions(): void {
    this.mentions.hidden = this.choices.length === 0;
    this.mentions.replaceChildren(
      ...this.choices.map((path, index) =>
        el('li', {
          text: path,
          attrs: {
            id: `mention-${index}`,
            role: 'option',
            'data-testid': 'mention',
            'data-path': path,
            'aria-selected': String(index === this.selected),
          },
        }),
      ),
    );
    if (this.choices.length > 0) this.prompt.setAttribute('aria-activedescendant', `mention-${this.selected}`);
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
