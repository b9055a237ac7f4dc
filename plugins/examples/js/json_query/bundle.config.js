// Merged into jco's Rolldown config by `--bundle-config`: WIT imports are resolved by the engine.
export default { external: [/^(toolhost|wasi):/] };
