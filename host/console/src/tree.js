// Calls under the calls that made them: a script's tool calls listed below the script's call,
// indented by depth, in the order given. An item whose parent is not in the list (a batch's
// calls, a parent already gone) is a root. Each item is visited once, whatever the ids say.
export function nest(items, parentOf = (i) => i.parent_id) {
  const byId = new Map(items.map((i) => [i.call_id, i]));
  const children = new Map();
  const roots = [];
  for (const item of items) {
    const parent = parentOf(item);
    if (parent != null && parent !== item.call_id && byId.has(parent)) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(item);
    } else {
      roots.push(item);
    }
  }
  const out = [];
  const seen = new Set();
  const visit = (item, depth) => {
    if (seen.has(item)) return;
    seen.add(item);
    out.push({ item, depth });
    for (const child of children.get(item.call_id) ?? []) visit(child, depth + 1);
  };
  for (const root of roots) visit(root, 0);
  // A cycle of parents has no root: its items are still shown.
  for (const item of items) visit(item, 0);
  return out;
}
