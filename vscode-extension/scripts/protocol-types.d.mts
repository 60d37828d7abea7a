/** The TypeScript source for `schema` (the parsed protocol/schema.json). */
export function renderProtocolTypes(schema: unknown): string;
