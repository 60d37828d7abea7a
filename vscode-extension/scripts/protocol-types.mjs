// Renders the daemon protocol's TypeScript types from protocol/schema.json.
// The schema is generated from the Python wire types, so the chain is
// protocol/wire/ -> schema.json -> src/protocol.ts, and a unit test fails when the last link drifts.

const HEADER = `// Generated from protocol/schema.json by \`npm run generate:protocol\`; do not edit by hand.
// The schema is generated from server/cleveragents/protocol/wire/.
/* eslint-disable */
`;

function refName(ref) {
  const prefix = '#/$defs/';
  if (!ref.startsWith(prefix)) {
    throw new Error(`unsupported $ref ${ref}`);
  }
  return ref.slice(prefix.length);
}

function scalar(name) {
  switch (name) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'object':
      return '{ [key: string]: unknown }';
    case 'array':
      return 'unknown[]';
    default:
      throw new Error(`unsupported JSON Schema type ${name}`);
  }
}

function typeOf(schema) {
  if (schema.$ref) {
    return refName(schema.$ref);
  }
  if (schema.anyOf) {
    return schema.anyOf.map(typeOf).join(' | ');
  }
  if (schema.enum) {
    return schema.enum.map((value) => JSON.stringify(value)).join(' | ');
  }
  if (schema.type === undefined) {
    return 'unknown';
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return types
    .map((type) => {
      if (type === 'array') {
        const items = schema.items ? typeOf(schema.items) : 'unknown';
        return /[ |]/.test(items) ? `Array<${items}>` : `${items}[]`;
      }
      if (type === 'object' && schema.properties) {
        throw new Error('nested object types must be $defs');
      }
      return scalar(type);
    })
    .join(' | ');
}

function comment(text, indent) {
  if (!text) {
    return '';
  }
  const safe = text.replace(/\*\//g, '*\\/');
  return `${indent}/** ${safe} */\n`;
}

function renderDef(name, schema) {
  let out = comment(schema.description, '');
  if (schema.enum) {
    // A named enum: its values at run time (for checks and pickers), and its type from them.
    const values = schema.enum.map((value) => JSON.stringify(value)).join(', ');
    out += `export const ${name}Values = [${values}] as const;\n`;
    return `${out}export type ${name} = (typeof ${name}Values)[number];\n`;
  }
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const keys = Object.keys(properties);
  if (keys.length === 0) {
    return `${out}export type ${name} = Record<string, never>;\n`;
  }
  out += `export interface ${name} {\n`;
  for (const key of keys) {
    const property = properties[key];
    out += comment(property.description, '  ');
    const optional = required.has(key) ? '' : '?';
    out += `  ${key}${optional}: ${typeOf(property)};\n`;
  }
  out += '}\n';
  return out;
}

function methodTable(methods, kind, direction) {
  const lines = [];
  for (const [name, method] of Object.entries(methods)) {
    if (method.kind !== kind || method.direction !== direction) {
      continue;
    }
    const params = method.params ? typeOf(method.params) : 'undefined';
    if (kind === 'request') {
      const result = method.result ? typeOf(method.result) : 'null';
      lines.push(`  ${JSON.stringify(name)}: { params: ${params}; result: ${result} };`);
    } else {
      lines.push(`  ${JSON.stringify(name)}: ${params};`);
    }
  }
  return lines.join('\n');
}

/** The TypeScript source for `schema` (the parsed protocol/schema.json). */
export function renderProtocolTypes(schema) {
  const defs = schema.$defs ?? {};
  const parts = [HEADER];
  parts.push(
    `/** The protocol version these types describe. */\nexport const PROTOCOL_VERSION = ${JSON.stringify(
      schema['x-protocolVersion'],
    )};\n`,
  );
  for (const name of Object.keys(defs).sort()) {
    parts.push(renderDef(name, defs[name]));
  }
  const methods = schema['x-methods'] ?? {};
  parts.push(
    `/** Requests the client sends. */\nexport interface ClientRequests {\n${methodTable(
      methods,
      'request',
      'clientToServer',
    )}\n}\n`,
  );
  parts.push(
    `/** Requests the daemon sends to the client. */\nexport interface ServerRequests {\n${methodTable(
      methods,
      'request',
      'serverToClient',
    )}\n}\n`,
  );
  parts.push(
    `/** Notifications the daemon sends, by method. */\nexport interface ServerNotifications {\n${methodTable(
      methods,
      'notification',
      'serverToClient',
    )}\n}\n`,
  );
  const codes = (schema['x-errorCodes'] ?? [])
    .map((entry) => `  ${entry.name}: ${entry.code},`)
    .join('\n');
  parts.push(`/** JSON-RPC error codes the daemon answers with. */\nexport const ErrorCodes = {\n${codes}\n} as const;\n`);
  return parts.join('\n');
}
