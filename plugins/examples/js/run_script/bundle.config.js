// Merged into jco's Rolldown config by `--bundle-config`: WIT imports are resolved by componentize-js.
export default { external: [/^(toolhost|wasi):/] };
