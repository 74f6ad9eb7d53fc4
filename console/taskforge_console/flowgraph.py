"""The layout of a task's flow graph, drawn on the task page as an inline SVG (server-side, by
the template ``pages/_flow_graph.html``; no script).

The input is a :class:`taskforge_console.queries.FlowComponent`: tasks (id -> type, state) and
dependency edges parent -> child. Tasks are put in layers, drawn as columns from left to right:
a task's layer is the length of the longest path to it from a root (a task with no parent in
the graph), so every edge points rightwards and a task stands right of all its parents. Within
a layer, tasks are ordered by the mean position of their parents in the layers before
(the barycenter heuristic, one pass, so edges cross less), then by task id; each layer is
centred vertically.

Coordinates are SVG user units (pixels at scale 1); the SVG has its natural size and the page
scrolls it when it is larger than the panel. Text is placed by the template, which escapes it
(Jinja autoescape); this module computes only numbers and shortened labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .queries import FlowComponent

__all__ = [
    "BOX_HEIGHT",
    "BOX_WIDTH",
    "Edge",
    "FlowGraph",
    "Node",
    "layers",
    "layout",
    "short_label",
]

#: Size of a task's box, the gaps between layers (horizontal) and between boxes (vertical),
#: and the margin around the drawing (SVG units).
BOX_WIDTH = 168
BOX_HEIGHT = 46
GAP_X = 56
GAP_Y = 14
MARGIN = 8
#: Longest task type shown in a box (longer ones end in "…"; the tooltip has the whole name).
LABEL_CHARS = 22


@dataclass(frozen=True)
class Node:
    """One task's box: top-left ``x``, ``y``; ``current`` for the task of the page."""

    task_id: int
    task_type: str
    label: str
    state: str
    layer: int
    x: float
    y: float
    current: bool


@dataclass(frozen=True)
class Edge:
    """A dependency edge drawn as the cubic Bézier path ``d`` from the parent's right side to
    the child's left side."""

    parent_task_id: int
    child_task_id: int
    d: str


@dataclass(frozen=True)
class FlowGraph:
    """What the template draws: boxes, edges, the SVG's size, the number of layers, and ``cut``
    when the component had more tasks than were read (the page says so)."""

    task_id: int
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    width: float
    height: float
    layer_count: int
    cut: bool
    box_width: int = BOX_WIDTH
    box_height: int = BOX_HEIGHT


def short_label(text: str, chars: int = LABEL_CHARS) -> str:
    """``text`` cut to ``chars`` characters, the last one an ellipsis when it was longer."""
    return text if len(text) <= chars else text[: chars - 1] + "…"


def layers(tasks: Iterable[int], edges: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Task id -> layer: the number of edges on the longest path from a root to the task
    (roots are layer 0). Edges whose ends are not both in ``tasks`` are ignored. Dependency
    graphs have no cycle (a task's parents exist before it); should one occur, its tasks are
    placed one layer after the deepest task reached."""
    ids = sorted(set(tasks))
    known = set(ids)
    children: dict[int, list[int]] = {t: [] for t in ids}
    pending = dict.fromkeys(ids, 0)
    for parent, child in set(edges):
        if parent in known and child in known and parent != child:
            children[parent].append(child)
            pending[child] += 1
    layer = dict.fromkeys(ids, 0)
    ready = [t for t in ids if pending[t] == 0]
    done: set[int] = set()
    while ready:  # Kahn's order: a task is placed once all its parents are
        task = ready.pop()
        done.add(task)
        for child in children[task]:
            layer[child] = max(layer[child], layer[task] + 1)
            pending[child] -= 1
            if pending[child] == 0:
                ready.append(child)
    if len(done) < len(ids):
        deepest = max((layer[t] for t in done), default=-1)
        for t in ids:
            if t not in done:
                layer[t] = deepest + 1
    return layer


def _order(by_layer: Mapping[int, list[int]], parents: Mapping[int, list[int]]) -> dict[int, int]:
    """Task id -> position in its layer (barycenter of the parents' positions, then id)."""
    position: dict[int, int] = {}
    for depth in sorted(by_layer):

        def key(task: int) -> tuple[float, int]:
            placed = [position[p] for p in parents.get(task, ()) if p in position]
            return (sum(placed) / len(placed) if placed else -1.0, task)

        for i, task in enumerate(sorted(by_layer[depth], key=key)):
            position[task] = i
    return position


def layout(component: FlowComponent) -> FlowGraph | None:
    """The drawing of ``component``, or ``None`` when it has no edge (a task without
    dependencies has no graph)."""
    if not component.edges:
        return None
    tasks = component.tasks
    layer = layers(tasks, component.edges)
    by_layer: dict[int, list[int]] = {}
    for task, depth in layer.items():
        by_layer.setdefault(depth, []).append(task)
    parents: dict[int, list[int]] = {}
    for parent, child in component.edges:
        parents.setdefault(child, []).append(parent)
    position = _order(by_layer, parents)
    tallest = max(len(members) for members in by_layer.values())
    step_y = BOX_HEIGHT + GAP_Y
    height = 2 * MARGIN + tallest * step_y - GAP_Y
    layer_count = max(by_layer) + 1
    width = 2 * MARGIN + layer_count * (BOX_WIDTH + GAP_X) - GAP_X

    boxes: dict[int, tuple[float, float]] = {}
    nodes = []
    for task in sorted(tasks, key=lambda t: (layer[t], position[t])):
        offset = (tallest - len(by_layer[layer[task]])) * step_y / 2
        x = float(MARGIN + layer[task] * (BOX_WIDTH + GAP_X))
        y = MARGIN + offset + position[task] * step_y
        boxes[task] = (x, y)
        task_type, state = tasks[task]
        nodes.append(
            Node(
                task_id=task,
                task_type=task_type,
                label=short_label(task_type),
                state=state,
                layer=layer[task],
                x=x,
                y=y,
                current=task == component.task_id,
            )
        )
    drawn = []
    for parent, child in component.edges:
        if parent not in boxes or child not in boxes:
            continue
        x1, y1 = boxes[parent][0] + BOX_WIDTH, boxes[parent][1] + BOX_HEIGHT / 2
        x2, y2 = boxes[child][0], boxes[child][1] + BOX_HEIGHT / 2
        bend = max((x2 - x1) / 2, GAP_X / 2)
        d = f"M{x1:g} {y1:g} C{x1 + bend:g} {y1:g} {x2 - bend:g} {y2:g} {x2:g} {y2:g}"
        drawn.append(Edge(parent, child, d))
    return FlowGraph(
        task_id=component.task_id,
        nodes=tuple(nodes),
        edges=tuple(drawn),
        width=float(width),
        height=float(height),
        layer_count=layer_count,
        cut=component.cut,
    )
