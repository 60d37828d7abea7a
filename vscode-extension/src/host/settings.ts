// The `cleveragents.*` settings, read once into a plain object, and what they turn into:
// the daemon's initializationOptions and each run's params.

import * as path from 'node:path';

import { AutomationProfileValues, type AutomationProfile, type InitializationOptions, type RunParams } from '../protocol';

export const PROVIDERS = ['offline', 'replay', 'anthropic', 'openai'] as const;
export type Provider = (typeof PROVIDERS)[number];

export const AUTOMATION_PROFILES = AutomationProfileValues;
export type { AutomationProfile };

export interface Settings {
  pythonPath: string;
  provider: Provider;
  model: string;
  baseUrl: string;
  replayScript: string;
  maxIterations: number;
  automationProfile: AutomationProfile;
  historyPath: string;
}

/** The part of `WorkspaceConfiguration` this module needs. */
export interface ConfigurationReader {
  get<T>(section: string): T | undefined;
}

/** Settings whose change needs a new daemon process (the others apply to the next run). */
export const RESTART_SETTINGS = ['pythonPath', 'historyPath'] as const;

export function readSettings(config: ConfigurationReader): Settings {
  return {
    pythonPath: text(config.get('pythonPath')),
    provider: oneOf(config.get('provider'), PROVIDERS, 'offline'),
    model: text(config.get('model')),
    baseUrl: text(config.get('baseUrl')),
    replayScript: text(config.get('replayScript')),
    maxIterations: positiveInteger(config.get('maxIterations'), 25),
    automationProfile: oneOf(config.get('automationProfile'), AUTOMATION_PROFILES, 'ask'),
    historyPath: text(config.get('historyPath')),
  };
}

/** The daemon's defaults; every run also sends its own values (settings may change). */
export function initializationOptions(settings: Settings): InitializationOptions {
  const options: InitializationOptions = {
    provider: settings.provider,
    automationProfile: settings.automationProfile,
    maxIterations: settings.maxIterations,
    approvals: true,
  };
  if (settings.model) options.model = settings.model;
  if (settings.baseUrl) options.baseUrl = settings.baseUrl;
  return options;
}

export interface RunRequest {
  prompt: string;
  sandboxRoot: string;
  runId: string;
  continueFrom?: string | null;
}

export function runParams(settings: Settings, request: RunRequest): RunParams {
  const params: RunParams = {
    prompt: request.prompt,
    sandboxRoot: request.sandboxRoot,
    runId: request.runId,
    provider: settings.provider,
    maxIterations: settings.maxIterations,
    automationProfile: settings.automationProfile,
  };
  if (request.continueFrom) params.continueFrom = request.continueFrom;
  if (settings.model) params.model = settings.model;
  if (settings.baseUrl) params.baseUrl = settings.baseUrl;
  if (settings.replayScript) {
    params.replayScript = path.isAbsolute(settings.replayScript)
      ? settings.replayScript
      : path.resolve(request.sandboxRoot, settings.replayScript);
  }
  return params;
}

/** A run id the daemon accepts (1 to 64 of letters, digits, `_-.:`) and that sorts by time. */
export function newRunId(now: number = Date.now(), random: () => number = Math.random): string {
  const suffix = Math.floor(random() * 36 ** 6)
    .toString(36)
    .padStart(6, '0');
  return `vscode-${now.toString(36).padStart(9, '0')}-${suffix}`;
}

function text(value: unknown): string {
  return typeof value === 'string' ? value.trim() : '';
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], fallback: T): T {
  return typeof value === 'string' && (allowed as readonly string[]).includes(value)
    ? (value as T)
    : fallback;
}

function positiveInteger(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 ? value : fallback;
}
