"""The generic-plugin fixture in Python: ../wit/shapes.wit implemented plainly (no toolhost contract).

Built with componentize-py against the world `shapes`; toolhost serves each exported function as a tool.
"""

import math

import wit_world
from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import geometry as g


class Geometry(exports.Geometry):
    def area(self, shape):
        if isinstance(shape, g.Shape_Circle):
            if shape.value < 0:
                raise Err(f"negative radius {shape.value}")
            return math.pi * shape.value * shape.value
        if isinstance(shape, g.Shape_Rectangle):
            w, h = shape.value
            if w < 0 or h < 0:
                raise Err("negative side")
            return w * h
        if isinstance(shape, g.Shape_Polygon):
            pts = shape.value
            twice = sum(pts[i].x * pts[(i + 1) % len(pts)].y - pts[(i + 1) % len(pts)].x * pts[i].y
                        for i in range(len(pts)))
            return abs(twice) / 2
        return 0.0

    def sum(self, values):
        total = sum(values)
        # s64 wraps, as the Rust fixture's does.
        return (total + 2**63) % 2**64 - 2**63

    def show(self, p, unit, style):
        suffix = "" if unit is None else " " + unit.name.lower()
        names = [n for n, f in (("bold", g.Style.BOLD), ("italic", g.Style.ITALIC),
                                ("underline", g.Style.UNDERLINE)) if f in style]
        return f"({fmt(p.x)}, {fmt(p.y)}){suffix} [{','.join(names)}]"

    def reverse(self, data):
        return bytes(reversed(data))

    def bounds(self, small, big, signed, letter):
        return (small, big, signed, letter)

    def summarize(self, values, label):
        if not values:
            raise Err(g.Problem.EMPTY)
        if len(values) > 1000:
            raise Err(g.Problem.TOO_MANY)
        return g.Summary(count=len(values), total=sum(values), label=label, units=[g.Unit.MM, g.Unit.M])

    def crash(self, message):
        raise RuntimeError(message)


class WitWorld(wit_world.WitWorld):
    def greet(self, name):
        return f"Hello, {name}!"


def fmt(x):
    """Floats as Rust writes them: 1 for 1.0, 1.5 for 1.5."""
    return str(int(x)) if x == int(x) else repr(x)
