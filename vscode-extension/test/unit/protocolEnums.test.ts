import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import * as protocol from '../../src/protocol';
import { AUTOMATION_PROFILES } from '../../src/host/settings';
import { undoInfoOf } from '../../src/shared/runState';
import { EXTENSION_ROOT } from './pythonForTests';

interface SchemaDef {
  type?: string;
  enum?: string[];
}

function schemaEnums(): Map<string, string[]> {
  const schemaPath = join(EXTENSION_ROOT, '..', 'protocol', 'schema.json');
  const schema = JSON.parse(readFileSync(schemaPath, 'utf8')) as { $defs: Record<string, SchemaDef> };
  const found = new Map<string, string[]>();
  for (const [name, def] of Object.entries(schema.$defs)) {
    if (def.enum !== undefined) found.set(name, def.enum);
  }
  return found;
}

describe('the protocol enums', () => {
  it('are each named in protocol/schema.json, with the values src/protocol.ts exports', () => {
    const enums = schemaEnums();
    // The ones the extension reads: a schema that stopped naming them would leave copies behind.
    for (const name of ['ApprovalDecision', 'AutomationProfile', 'ChangeKind', 'FinishReason', 'RunKind', 'RunStatus', 'StopReason']) {
      assert.ok(enums.has(name), `${name} is not a named enum in the schema`);
    }
    const exported = protocol as unknown as Record<string, unknown>;
    for (const [name, values] of enums) {
      assert.deepEqual(exported[`${name}Values`], values, `${name}Values differs from the schema`);
    }
    const generated = Object.keys(exported).filter((key) => key.endsWith('Values')).map((key) => key.slice(0, -'Values'.length));
    assert.deepEqual(generated.sort(), [...enums.keys()].sort());
  });

  it('are what the settings offer as automation profiles', () => {
    assert.deepEqual([...AUTOMATION_PROFILES], schemaEnums().get('AutomationProfile'));
  });
});

describe('the undo facts of a run', () => {
  it('come from its result, and a result without checkpoints (a daemon before 1.3) gives none', () => {
    const changedFiles = [{ path: 'notes.txt', change: 'added' as const, ignored: false }];
    const checkpoints = [{ iteration: 1, createdAt: 1, note: null }];
    assert.deepEqual(undoInfoOf({ changedFiles, checkpointWarning: null, checkpoints }), {
      checkpoints: [1],
      changedFiles,
      checkpointWarning: null,
    });
    assert.equal(undoInfoOf({ changedFiles, checkpointWarning: null }), null);
  });
});
