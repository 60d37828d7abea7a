// Undo's pure parts: the confirmation a restore's dry run becomes, the refusals in words, and
// how a run's state takes the daemon's checkpoints.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { confirmation, restoreDone, restoreErrorText, restoreTitle } from '../../src/host/restorePlan';
import { ErrorCodes, type RestoreResult } from '../../src/protocol';
import { RunState, type RunNotification } from '../../src/shared/runState';

const preview: RestoreResult = {
  restoreId: null,
  sandboxRoot: '/home/me/project',
  changedFiles: [
    { path: 'hello.txt', change: 'deleted' },
    { path: 'notes.txt', change: 'modified' },
    { path: 'old.txt', change: 'added' },
  ],
  kept: [],
  dryRun: true,
};

describe('restore confirmation', () => {
  it('names what is undone and lists every file with what the restore does to it', () => {
    const run = { runId: 'r1', iteration: null, kind: 'run' as const, prompt: 'Write hello.txt' };
    const ask = confirmation(run, preview);
    assert.equal(ask.message, 'Undo the run "Write hello.txt"? 3 files in /home/me/project will change.');
    assert.equal(ask.confirm, 'Undo Run');
    assert.deepEqual(ask.detail.split('\n').slice(0, 3), ['Deleted: hello.txt', 'Changed back: notes.txt', 'Brought back: old.txt']);
    assert.match(ask.detail, /can be undone too/);

    const step = confirmation({ ...run, iteration: 2 }, { ...preview, changedFiles: preview.changedFiles.slice(0, 1), kept: ['big.bin'] });
    assert.equal(step.message, 'Restore the folder to before step 2 of "Write hello.txt"? 1 file in /home/me/project will change.');
    assert.equal(step.confirm, 'Restore');
    assert.match(step.detail, /Left as they are .*: big\.bin/);

    const undoRestore = confirmation({ runId: 'restore_1', iteration: null, kind: 'restore', prompt: 'undo run r1' }, preview);
    assert.equal(undoRestore.confirm, 'Undo Restore');
    assert.equal(restoreTitle({ runId: 'r', iteration: null, kind: 'run', prompt: 'x'.repeat(100) }).length, 'Undo the run ""'.length + 60);
  });

  it('counts the files past the first thirty', () => {
    const many = Array.from({ length: 45 }, (_, i) => ({ path: `f${i}.txt`, change: 'modified' as const }));
    const ask = confirmation({ runId: 'r', iteration: null, kind: 'run', prompt: 'p' }, { ...preview, changedFiles: many });
    assert.ok(ask.detail.includes('Changed back: f29.txt'));
    assert.ok(!ask.detail.includes('f30.txt'));
    assert.ok(ask.detail.includes('… and 15 more'));
  });

  it('says what was done', () => {
    const target = { runId: 'r1', iteration: null, kind: 'run' as const, prompt: 'p' };
    assert.equal(restoreDone(target, { ...preview, restoreId: 'restore_1', dryRun: false }), 'Undid the run: hello.txt (deleted), notes.txt (changed back), old.txt (brought back).');
    assert.equal(restoreDone({ ...target, iteration: 2 }, { ...preview, changedFiles: [], kept: ['a'] }), 'Restored to before step 2: no file needed changing. 1 file(s) were left as they are.');
  });
});

describe('restore refusals', () => {
  it('explains a run still going, with its folder and runs', () => {
    const text = restoreErrorText(ErrorCodes.RunActive, 'a run is active', { sandboxRoot: '/w', activeRunIds: ['run_9'] });
    assert.equal(text, 'Cannot restore while a run is going in /w (run_9): stop it or let it finish, then try again.');
    assert.match(restoreErrorText(ErrorCodes.RunActive, 'x', null), /in this folder:/);
  });

  it('points at the restore that undoes a partial one, and passes other messages on', () => {
    assert.match(restoreErrorText(ErrorCodes.RestoreFailed, 'git failed.', { restoreId: 'restore_7' }), /git failed\. .*restore_7/);
    assert.equal(restoreErrorText(-32017, 'run r1 cannot be restored: its checkpoints were pruned', null), 'run r1 cannot be restored: its checkpoints were pruned');
  });
});

describe('run state with checkpoints', () => {
  function finishedRun(): RunState {
    const state = new RunState('r1');
    let seq = 0;
    const apply = (method: string, params: object): void => {
      seq += 1;
      state.apply({ method, params: { ...params, runId: 'r1', seq } } as RunNotification);
    };
    for (const iteration of [1, 2, 3]) apply('cleveragents/iterationStarted', { iteration });
    apply('cleveragents/runFinished', {
      stopReason: 'final_answer',
      content: 'ok',
      iterations: 3,
      terminatedByLimit: false,
      usage: { inputTokens: 0, outputTokens: 0 },
      toolCalls: 0,
      error: null,
      errorType: null,
    });
    return state;
  }

  it('marks the iterations with a checkpoint, makes the run undoable and takes the daemon\'s files', () => {
    const state = finishedRun();
    const updated: string[] = [];
    state.onEntry((entry, change) => {
      if (change === 'updated') updated.push(entry.id);
    });
    state.setUndoInfo({ checkpoints: [2, 3], changedFiles: [{ path: 'out.txt', change: 'deleted' }], checkpointWarning: null });
    const iterations = state.entries.filter((entry) => entry.kind === 'iteration');
    assert.deepEqual(iterations.map((entry) => entry.kind === 'iteration' && entry.restorable), [false, true, true]);
    assert.equal(state.end?.undoable, true);
    assert.deepEqual(state.end?.changedFiles, [{ path: 'out.txt', change: 'deleted' }]);
    assert.deepEqual(updated, ['iteration-2', 'iteration-3', 'end']);
    // The same news again changes nothing.
    updated.length = 0;
    state.setUndoInfo({ checkpoints: [2, 3], changedFiles: [{ path: 'out.txt', change: 'deleted' }], checkpointWarning: null });
    assert.deepEqual(updated, []);
    // It survives the trip to the webview.
    const copy = RunState.fromSnapshot(JSON.parse(JSON.stringify(state.toSnapshot())));
    assert.equal(copy.end?.undoable, true);
  });

  it('without checkpoints: not undoable, with the warning', () => {
    const state = finishedRun();
    state.setUndoInfo({ checkpoints: [], changedFiles: [], checkpointWarning: 'git is missing' });
    assert.equal(state.end?.undoable, false);
    assert.equal(state.end?.checkpointWarning, 'git is missing');
    assert.ok(state.entries.every((entry) => entry.kind !== 'iteration' || !entry.restorable));
  });
});
