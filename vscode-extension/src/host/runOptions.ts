// Provider, model and automation profile chosen in the panel: remembered per workspace
// (workspaceState) and laid over the settings, which stay the defaults. Pure.

import { AUTOMATION_PROFILES, PROVIDERS, type AutomationProfile, type Provider, type Settings } from './settings';

export const RUN_OPTIONS_KEY = 'cleveragents.runOptions';

/** What the panel overrides; a missing field means "the setting". */
export interface RunOptions {
  provider?: Provider;
  model?: string;
  automationProfile?: AutomationProfile;
}

/** Keeps only valid values (workspaceState may hold anything an older version wrote). */
export function cleanRunOptions(value: unknown): RunOptions {
  const record = (value !== null && typeof value === 'object' ? value : {}) as Record<string, unknown>;
  const options: RunOptions = {};
  if (typeof record.provider === 'string' && (PROVIDERS as readonly string[]).includes(record.provider)) {
    options.provider = record.provider as Provider;
  }
  if (typeof record.model === 'string' && record.model.trim().length <= 200) {
    options.model = record.model.trim();
  }
  if (typeof record.automationProfile === 'string' && (AUTOMATION_PROFILES as readonly string[]).includes(record.automationProfile)) {
    options.automationProfile = record.automationProfile as AutomationProfile;
  }
  return options;
}

export function applyRunOptions(settings: Settings, options: RunOptions): Settings {
  const effective = { ...settings };
  if (options.provider !== undefined) effective.provider = options.provider;
  if (options.model !== undefined) {
    // A model belongs to its provider: a different provider picked here drops the setting's model.
    effective.model = options.model;
  } else if (options.provider !== undefined && options.provider !== settings.provider) {
    effective.model = '';
  }
  if (options.automationProfile !== undefined) effective.automationProfile = options.automationProfile;
  return effective;
}
