// Drives the daemon with vscode-jsonrpc (what vscode-languageclient is built on) and prints
// what it saw as JSON. tests/daemon/test_node_client.py runs it and checks the output.
//
// Environment: DAEMON_COMMAND (JSON array), INIT_OPTIONS (JSON), SANDBOX, WAIT_SCRIPT.
import { spawn } from 'node:child_process';
import * as rpc from 'vscode-jsonrpc/node';

const [command, ...args] = JSON.parse(process.env.DAEMON_COMMAND);
const daemon = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
const exited = new Promise((resolve) => daemon.on('exit', (code) => resolve(code)));
const connection = rpc.createMessageConnection(
  new rpc.StreamMessageReader(daemon.stdout),
  new rpc.StreamMessageWriter(daemon.stdin),
);

const notes = [];
let arrived = () => {};
// Every notification of a run (each carries the run's seq): one left out shows as a gap.
for (const name of ['runStarted', 'iterationStarted', 'textDelta', 'usage', 'toolCallStarted', 'toolCall',
  'plan', 'snapshot', 'snapshotProgress', 'runFinished']) {
  connection.onNotification(`cleveragents/${name}`, (params) => {
    notes.push([name, params]);
    arrived();
  });
}
const approvals = [];
connection.onRequest('cleveragents/approveToolCall', (params) => {
  approvals.push(params);
  return { decision: 'allow' };
});
connection.listen();

function noteArrives(predicate) {
  return new Promise((resolve) => {
    const check = () => {
      if (notes.some(predicate)) resolve();
      else arrived = check;
    };
    check();
  });
}

async function errorOf(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return { code: error.code, message: error.message, data: error.data ?? null };
  }
}

const sandbox = process.env.SANDBOX;
const initialize = await connection.sendRequest('initialize', {
  processId: process.pid,
  capabilities: { experimental: { cleveragents: { approvals: true } } },
  initializationOptions: JSON.parse(process.env.INIT_OPTIONS),
});
await connection.sendNotification('initialized', {});

const result = await connection.sendRequest('cleveragents/run', {
  prompt: 'write a note', sandboxRoot: sandbox, runId: 'node-1', automationProfile: 'ask',
});

const source = new rpc.CancellationTokenSource();
const waiting = connection.sendRequest('cleveragents/run', {
  prompt: 'wait', sandboxRoot: sandbox, runId: 'node-2', replayScript: process.env.WAIT_SCRIPT,
}, source.token);
await noteArrives(([name, params]) => name === 'toolCallStarted' && params.runId === 'node-2');
source.cancel();
const cancelError = await errorOf(waiting);
await noteArrives(([name, params]) => name === 'runFinished' && params.runId === 'node-2');

const badParams = await errorOf(
  connection.sendRequest('cleveragents/run', { prompt: 7, sandboxRoot: sandbox }),
);
const stored = await connection.sendRequest('cleveragents/getRun', { runId: 'node-2' });

await connection.sendRequest('shutdown');
await connection.sendNotification('exit');
const exitCode = await exited;
connection.dispose();
process.stdout.write(JSON.stringify({
  initialize, result, notes, approvals, cancelError, badParams, stored, exitCode,
}));
