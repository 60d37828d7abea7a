// Rewrites src/protocol.ts from ../protocol/schema.json (see protocol-types.mjs).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { renderProtocolTypes } from './protocol-types.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const schemaPath = join(root, '..', 'protocol', 'schema.json');
const outPath = join(root, 'src', 'protocol.ts');
const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
writeFileSync(outPath, renderProtocolTypes(schema));
console.log(`wrote ${outPath}`);
