// The generic-plugin fixture in JavaScript: ../wit/shapes.wit implemented plainly (no toolhost
// contract). Built with jco + componentize-js against the world `shapes`; toolhost serves each
// exported function as a tool. jco's mapping: variants are { tag, val }, s64/u64 are BigInt, list<u8>
// is a Uint8Array, flags are an object of booleans, and a thrown value is a `result`'s err.

export const geometry = {
  area(shape) {
    switch (shape.tag) {
      case 'circle':
        if (shape.val < 0) throw `negative radius ${shape.val}`;
        return Math.PI * shape.val * shape.val;
      case 'rectangle': {
        const [w, h] = shape.val;
        if (w < 0 || h < 0) throw 'negative side';
        return w * h;
      }
      case 'polygon': {
        const p = shape.val;
        let twice = 0;
        for (let i = 0; i < p.length; i++) {
          const a = p[i];
          const b = p[(i + 1) % p.length];
          twice += a.x * b.y - b.x * a.y;
        }
        return Math.abs(twice) / 2;
      }
      default:
        return 0;
    }
  },

  sum(values) {
    return BigInt.asIntN(64, values.reduce((a, b) => a + b, 0n));
  },

  show(p, unit, style) {
    const suffix = unit === undefined || unit === null ? '' : ` ${unit}`;
    const names = ['bold', 'italic', 'underline'].filter((n) => style[n]);
    return `(${p.x}, ${p.y})${suffix} [${names.join(',')}]`;
  },

  reverse(data) {
    return Uint8Array.from(data).reverse();
  },

  bounds(small, big, signed, letter) {
    return [small, big, signed, letter];
  },

  summarize(values, label) {
    if (values.length === 0) throw 'empty';
    if (values.length > 1000) throw 'too-many';
    return {
      count: values.length,
      total: values.reduce((a, b) => a + b, 0n),
      label,
      units: ['mm', 'm'],
    };
  },

  crash(message) {
    throw new Error(message);
  },
};

export function greet(name) {
  return `Hello, ${name}!`;
}
