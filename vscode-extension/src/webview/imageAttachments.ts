// Images attached to the prompt: pasted into the prompt box or dropped on the composer, shown
// as chips (a thumbnail, the name, a remove button) until the prompt is sent; and the
// thumbnails of a run's images in its transcript. The panel checks nothing about an image
// beyond taking image files: the daemon reads the type and size from the bytes and refuses
// what it cannot send, naming the image (docs/images.md).

import type { ImageItem } from '../shared/messages';
import type { PromptImage } from '../shared/runState';
import { el } from './dom';

export class ImageAttachments {
  private items: ImageItem[] = [];
  /** Files still being read: a send waits for none, but a late one still lands as a chip. */
  private reading = 0;

  constructor(
    dropTarget: HTMLElement,
    prompt: HTMLTextAreaElement,
    private readonly chips: HTMLElement,
    private readonly changed: () => void,
  ) {
    prompt.addEventListener('paste', (event) => {
      const files = imageFiles(event.clipboardData);
      if (files.length > 0) {
        event.preventDefault(); // the image, not its file name as text
        for (const file of files) this.add(file);
      }
    });
    dropTarget.addEventListener('dragover', (event) => {
      if (carriesFiles(event.dataTransfer)) {
        event.preventDefault();
        if (event.dataTransfer) event.dataTransfer.dropEffect = 'copy';
      }
    });
    dropTarget.addEventListener('drop', (event) => {
      const files = imageFiles(event.dataTransfer);
      if (files.length > 0) {
        event.preventDefault();
        for (const file of files) this.add(file);
      }
    });
    this.chips.addEventListener('click', (event) => {
      const index = (event.target as Element | null)?.closest('button')?.getAttribute('data-index');
      if (index !== null && index !== undefined) {
        this.items.splice(Number(index), 1);
        this.render();
      }
    });
  }

  get images(): ImageItem[] {
    return [...this.items];
  }

  get busy(): boolean {
    return this.reading > 0;
  }

  /** After a run is sent: the images went with it. */
  clear(): void {
    this.items = [];
    this.render();
  }

  private add(file: File): void {
    this.reading += 1;
    const reader = new FileReader();
    reader.addEventListener('loadend', () => {
      this.reading -= 1;
      const url = typeof reader.result === 'string' ? reader.result : '';
      const comma = url.indexOf(',');
      if (reader.error === null && url.startsWith('data:') && comma > 0) {
        const name = file.name || `pasted image ${this.items.length + 1}`;
        this.items.push({ name, mediaType: file.type, data: url.slice(comma + 1) });
      }
      this.render();
    });
    reader.readAsDataURL(file);
  }

  private render(): void {
    this.chips.replaceChildren(
      ...this.items.map((image, index) =>
        el(
          'span',
          { className: 'chip image-chip', attrs: { 'data-testid': 'image-chip', title: image.name } },
          thumbnail(image, 'image-chip-thumb'),
          el('span', { text: image.name }),
          el('button', {
            className: 'chip-remove',
            text: '×',
            attrs: {
              type: 'button',
              'data-index': String(index),
              'data-testid': 'image-remove',
              'aria-label': `Remove ${image.name}`,
            },
          }),
        ),
      ),
    );
    this.changed();
  }
}

/** A run's images as thumbnails (an evicted one as its name). */
export function renderRunImages(container: HTMLElement, images: readonly PromptImage[]): void {
  const key = JSON.stringify(images.map((image) => [image.name, image.data?.length ?? 0]));
  if (container.getAttribute('data-drawn') === key) return;
  container.setAttribute('data-drawn', key);
  container.hidden = images.length === 0;
  container.replaceChildren(
    ...images.map((image) =>
      image.data === null
        ? el('span', { className: 'run-image-gone', text: `${image.name} (no longer stored)` })
        : thumbnail({ ...image, data: image.data }, 'run-image'),
    ),
  );
}

function thumbnail(image: { name: string; mediaType: string; data: string }, className: string): HTMLImageElement {
  return el('img', {
    className,
    attrs: {
      src: `data:${image.mediaType};base64,${image.data}`,
      alt: image.name,
      title: image.name,
      'data-testid': className,
    },
  });
}

function imageFiles(data: DataTransfer | null): File[] {
  if (data === null) return [];
  return Array.from(data.files).filter((file) => file.type.startsWith('image/'));
}

function carriesFiles(data: DataTransfer | null): boolean {
  return data !== null && Array.from(data.types).includes('Files');
}
