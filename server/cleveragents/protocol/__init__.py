"""The protocol's shapes, below every front: the wire types (`wire`), the one converter that
turns them into camelCase JSON and back (`converter`), and the core's results as wire types
(`translate`). The daemon sends them; the CLI's `--json` prints the same shapes."""
